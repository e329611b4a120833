"""USE multilingual as a LanceDB embedding function (offline, weights in the package)."""

import lancedb
import numpy as np
from lancedb.embeddings import get_registry
from lancedb.pydantic import LanceModel, Vector

from loopwarden.agents.memory.embedding import UniversalSentenceEncoder, register_lancedb_embedding


def test_registered_function_embeds_and_searches(tmp_path):
    use = get_registry().get(register_lancedb_embedding()).create()

    class Note(LanceModel):
        text: str = use.SourceField()
        vector: Vector(use.ndims()) = use.VectorField()

    table = lancedb.connect(str(tmp_path)).create_table("notes", schema=Note)
    table.add(
        [
            {"text": "The user prefers SQLite for local storage"},
            {"text": "The deploy script needs execute permission"},
        ]
    )
    hit = table.search("用户喜欢用 SQLite 做本地存储").limit(1).to_list()[0]
    assert hit["text"] == "The user prefers SQLite for local storage"  # across languages
    assert len(hit["vector"]) == 512


def test_use_scores_paraphrases_high_and_unrelated_low():
    model = UniversalSentenceEncoder()
    v = model.embed(
        [
            "The user prefers SQLite for local storage",
            "The user likes to use SQLite for storing data locally",
            "The deploy script needs execute permission",
        ]
    )
    assert float(v[0] @ v[1]) > 0.8
    assert float(v[0] @ v[2]) < 0.4
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)


def test_the_e5_option_embeds_queries_and_passages():
    from loopwarden.agents.memory.embedding import E5Embedder

    model = E5Embedder()
    passages = model.embed(
        ["The user prefers SQLite for local storage", "The deploy script needs execute permission"]
    )
    query = model.embed_query(["which database does the user like?"])[0]
    assert passages.shape == (2, 384)
    assert float(passages[0] @ query) > float(passages[1] @ query)
