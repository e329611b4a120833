"""The memory write and read paths on a real LanceDB directory (hashing embedder)."""

import itertools

import pytest

from loopwarden.agents.memory.embedding import HashingEmbedder
from loopwarden.agents.memory.retrieval import MemorySearch
from loopwarden.agents.memory.writer import MemoryWriter
from loopwarden.schemas.memory import validate_memory_write
from loopwarden.settings import MemorySettings
from loopwarden.storage.memory_table import MemoryTable

CFG = MemorySettings(embedder="hashing")
NOW = 1_800_000_000.0
_n = itertools.count()


def write(content, event_id=None, **payload):
    return validate_memory_write(
        {
            "event_id": event_id or f"w{next(_n)}",
            "occurred_at": NOW,
            "payload": {"content": content, **payload},
        }
    )


@pytest.fixture
def memory(tmp_path):
    table = MemoryTable(str(tmp_path / "lance"), CFG.hashing_dims)
    embedder = HashingEmbedder(CFG.hashing_dims)
    return table, MemoryWriter(table, embedder, CFG), MemorySearch(table, embedder, CFG)


STREAM = [
    dict(
        event_id="m1",
        content="The user prefers SQLite for local storage",
        tags=["database", "preference"],
        potential_questions=["Which database does the user prefer?"],
        entity_refs=["sqlite"],
        scores={"r": 0.9, "p": 0.9},
    ),
    dict(
        event_id="m2",
        content="The user prefers SQLite for local storage.",
        tags=["database", "preference"],
        potential_questions=["Which database does the user prefer?"],
    ),
    dict(
        event_id="m3",
        content="The user does not prefer SQLite for local storage",
        tags=["database"],
        potential_questions=["Does the user avoid SQLite?"],
    ),
    dict(
        event_id="m4",
        content="Deploy with password: hunter2 and token=abcdef123456 on host db1",
        tags=["deploy"],
    ),
    dict(
        event_id="m5",
        content="The deploy script needs execute permission before it runs",
        tags=["deploy", "permissions"],
        entity_refs=["deploy.sh"],
    ),
]


def test_a_stream_with_duplicates_contradictions_and_secrets(memory):
    table, writer, _ = memory
    outcomes = writer.write([write(**w) for w in STREAM], NOW)
    status = {o["event_id"]: o for o in outcomes}
    m1 = status["m1"]["memory_id"]
    assert status["m1"]["status"] == "stored"
    assert (status["m2"]["status"], status["m2"]["duplicate_of"]) == ("duplicate", m1)
    assert status["m3"]["status"] == "stored_with_conflicts"
    assert [c["memory_id"] for c in status["m3"]["conflicts"]] == [m1]
    assert status["m3"]["conflicts"][0]["confidence"] >= 0.55
    assert status["m4"]["redacted"] is True
    assert table.count() == 4  # m2 corroborated m1 instead of being stored
    row = table.get([m1])[0]
    assert (row["corroboration_count"], row["contradiction_count"]) == (1, 1)
    assert row["corroborated_by"] == ["m2"]
    secret_row = table.get([status["m4"]["memory_id"]])[0]
    assert "hunter2" not in secret_row["content"] and "abcdef123456" not in secret_row["content"]
    assert "[REDACTED]" in secret_row["content"]
    relations = table.relations_of([m1])
    assert [(r["src"], r["type"], r["dst"]) for r in relations] == [
        (status["m3"]["memory_id"], "contradicts", m1)
    ]


def test_replaying_the_stream_changes_nothing(memory):
    table, writer, _ = memory
    writer.write([write(**w) for w in STREAM], NOW)
    before = sorted(
        (r["id"], r["corroboration_count"], r["contradiction_count"], r["trust"])
        for r in table.columns(
            ["id", "corroboration_count", "contradiction_count", "trust"]
        ).to_pylist()
    )
    again = writer.write([write(**w) for w in STREAM], NOW + 60)
    assert {o["status"] for o in again} == {"already_stored"}
    after = sorted(
        (r["id"], r["corroboration_count"], r["contradiction_count"], r["trust"])
        for r in table.columns(
            ["id", "corroboration_count", "contradiction_count", "trust"]
        ).to_pylist()
    )
    assert after == before
    assert table.relations.count_rows() == 1


def test_search_fuses_strategies_and_respects_the_budget(memory):
    table, writer, search = memory
    writer.write([write(**w) for w in STREAM], NOW)
    result = search.search(
        "which database does the user prefer sqlite", budget_bytes=10 * 1024, now=NOW + 1
    )
    assert result.memories
    top = result.memories[0]
    assert "SQLite" in top["content"]
    assert set(top["matched_by"]) >= {"semantic", "full_text"}
    assert result.content_bytes <= 10 * 1024
    assert all(0 <= m["relevance"] <= 1 for m in result.memories)
    small = search.search("sqlite", budget_bytes=50)
    assert small.content_bytes <= 50 and len(small.memories) == 1
    touched = table.get([top["id"]])[0]
    assert touched["access_count"] == 1 and touched["last_access_at"] == NOW + 1


def test_entity_strategy_finds_memories_naming_the_entity(memory):
    _, writer, search = memory
    writer.write([write(**w) for w in STREAM], NOW)
    result = search.search("deploy.sh", strategies=("entity",))
    assert [m["matched_by"] for m in result.memories] == [["entity"]]


def test_a_supplied_embedding_must_fit_the_table(memory):
    _, writer, _ = memory
    with pytest.raises(ValueError, match="dimensions"):
        writer.write([write("x", embedding=[0.1, 0.2])], NOW)


def test_whole_table_ranking_is_columnar_and_matches_the_scalar_formula(memory):
    from loopwarden.agents.memory.retrieval import rank_table
    from loopwarden.agents.memory.scoring import DIMENSIONS, relevance

    table, writer, _ = memory
    writer.write(
        [write(f"memory {i}", scores={"r": (i % 10) / 10, "c": (i % 7) / 7}) for i in range(60)],
        NOW,
    )
    ranked = rank_table(table, CFG, scope="default", k=10)
    rows = {r["id"]: r for r in table.table.search().limit(100).to_list()}
    expected = sorted(
        ((i, relevance({d: r[d] for d in DIMENSIONS})) for i, r in rows.items()),
        key=lambda p: -p[1],
    )[:10]
    assert [s for _, s in ranked] == pytest.approx([s for _, s in expected])
    assert len(ranked) == 10


def test_the_answer_follows_the_fused_rank_unless_relevance_first_is_asked(tmp_path):
    table = MemoryTable(str(tmp_path / "lance"), CFG.hashing_dims)
    embedder = HashingEmbedder(CFG.hashing_dims)
    writer = MemoryWriter(table, embedder, CFG)
    weak_scores = {d: 0.1 for d in "rcoeat"} | {"p": 0.1}
    strong_scores = {d: 1.0 for d in "rcoeat"} | {"p": 1.0}
    writer.write(
        [
            write("Redis caches the session tokens", "hit", scores=weak_scores),
            write("Tokens rotate every night at midnight", "other", scores=strong_scores),
        ],
        NOW,
    )
    query = "redis caches session tokens"
    orders = {}
    for rank_by in ("rrf", "relevance"):
        search = MemorySearch(table, embedder, CFG.model_copy(update={"rank_by": rank_by}))
        found = search.search(query, strategies=("semantic", "full_text"))
        orders[rank_by] = [m["content"] for m in found.memories]
        rrf = {m["content"]: m["rrf"] for m in found.memories}
        relevance = {m["content"]: m["relevance"] for m in found.memories}
    hit, other = "Redis caches the session tokens", "Tokens rotate every night at midnight"
    assert rrf[hit] > rrf[other] and relevance[other] > relevance[hit]  # the orders disagree
    assert orders["rrf"] == [hit, other]
    assert orders["relevance"] == [other, hit]
    assert MemorySettings().rank_by == "rrf"


def test_a_search_reads_cards_and_answers_as_it_does_from_the_columns(memory):
    table, writer, search = memory
    writer.write([write(**w) for w in STREAM], NOW)
    queries = ["which database does the user prefer?", "deploy permission", "sqlite storage"]
    from_cards = [search.search(q, budget_bytes=4096).memories for q in queries]
    search._take_cards = search._take_in_parallel  # the 17 columns, as before cards
    from_columns = [search.search(q, budget_bytes=4096).memories for q in queries]
    assert from_cards == from_columns and all(from_cards)
    cards = table.columns(["card"]).column("card").to_pylist()
    assert all(cards) and "hunter2" not in str(cards)  # redacted before its card was made


def test_a_store_from_before_cards_gets_the_column_and_reads_old_rows_by_column(tmp_path):
    import lancedb
    import pyarrow as pa

    from loopwarden.storage.memory_schema import memory_schema

    uri = str(tmp_path / "old")
    old_schema = pa.schema([f for f in memory_schema(CFG.hashing_dims) if f.name != "card"])
    lancedb.connect(uri).create_table("memories", schema=old_schema)
    before = MemoryTable(uri, CFG.hashing_dims)  # opening it adds the (empty) card column
    embedder = HashingEmbedder(CFG.hashing_dims)
    MemoryWriter(before, embedder, CFG).write(
        [write("The staging database is PostgreSQL", tags=["db"])], NOW
    )
    before.table.update(where="true", values={"card": None})  # a row written before cards
    table = MemoryTable(uri, CFG.hashing_dims)
    assert "card" in table.table.schema.names
    MemoryWriter(table, embedder, CFG).write([write("CI caches pip downloads", tags=["ci"])], NOW)
    cards = {r["content"]: r["card"] for r in table.columns(["content", "card"]).to_pylist()}
    assert cards["The staging database is PostgreSQL"] is None and cards["CI caches pip downloads"]
    found = MemorySearch(table, embedder, CFG).search("staging database PostgreSQL pip CI")
    assert {m["content"] for m in found.memories} == set(cards)
    assert {tuple(m["tags"]) for m in found.memories} == {("db",), ("ci",)}
