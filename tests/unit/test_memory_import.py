"""``loopwarden memory import``: bulk load on a real LanceDB directory; the checks the
write path makes per memory happen in the next maintenance cycle."""

import orjson
from click.testing import CliRunner

from loopwarden.agents.memory.maintenance import Maintenance
from loopwarden.cli import main
from loopwarden.settings import MemorySettings
from loopwarden.storage.memory_table import MemoryTable

T0 = 1_800_000_000.0
SECRET = "hunter2xyz"


def line(event_id, content, **payload):
    event = {"event_id": event_id, "occurred_at": T0, "payload": {"content": content, **payload}}
    return orjson.dumps(event)


def test_import_redacts_is_idempotent_and_maintenance_merges_what_it_did_not_check(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("LOOPWARDEN_MEMORY__URI", str(tmp_path / "store"))
    monkeypatch.setenv("LOOPWARDEN_MEMORY__EMBEDDER", "hashing")
    source = tmp_path / "memories.jsonl"
    source.write_bytes(
        b"\n".join(
            [
                line("a", "deploy.sh needs execute permission", entity_refs=["deploy.sh"]),
                line("b", "deploy.sh needs execute permission", entity_refs=["deploy.sh"]),
                line("c", f"the staging login password={SECRET} works", tags=["staging"]),
                b'{"event_id": "d", "payload": {}}',
            ]
        )
    )
    runner = CliRunner()
    first = runner.invoke(main, ["memory", "import", str(source)])
    assert first.exit_code == 4, first.output  # one bad line
    assert '{"imported":3,"already_stored":0,"rejected":1}' in first.output
    assert "line 4:" in first.output
    again = runner.invoke(main, ["memory", "import", str(source)])
    assert '{"imported":0,"already_stored":3,"rejected":1}' in again.output

    cfg = MemorySettings(uri=str(tmp_path / "store"), embedder="hashing")
    table = MemoryTable(cfg.uri, cfg.hashing_dims)
    contents = table.columns(["content"]).column("content").to_pylist()
    assert len(contents) == 3 and not any(SECRET in c for c in contents)
    # the duplicate pair was stored as two memories; maintenance merges them
    report = Maintenance(table, cfg).run(T0 + 60)
    assert report.consolidated == 1
    live = table.columns(["content"], where="deleted = false").column("content").to_pylist()
    assert sorted(live).count("deploy.sh needs execute permission") == 1


def test_the_columnar_rows_of_a_batch_equal_the_write_paths_rows():
    """Bulk paths build Arrow columns; every value must be what ``new_row`` stores."""
    import numpy as np

    from loopwarden.agents.memory.embedding import HashingEmbedder
    from loopwarden.agents.memory.rows import (
        content_vectors,
        new_row,
        new_rows_table,
        questions_vectors,
    )
    from loopwarden.schemas.memory import validate_memory_write
    from loopwarden.storage.memory_schema import memory_schema, rows_to_arrow

    cfg = MemorySettings(embedder="hashing")
    embedder = HashingEmbedder(cfg.hashing_dims)
    rng = np.random.default_rng(5)
    payloads = [
        {"content": "plain fact", "scope": "s1"},
        {
            "content": "Deploy with password: hunter2 on DB1",
            "tags": ["Deploy", "db"],
            "potential_questions": ["how to deploy?"],
            "entity_refs": ["DB1", "deploy.sh"],
            "scores": {"r": 0.9, "e": 0.4, "p": 1.0},
            "importance": 0.33,
            "source_reliability": 0.95,
            "memory_type": "preference",
            "layer": "long_term",
            "source_loop_id": "loop-1",
            "source_event_id": "ev-1",
        },
        {"content": "supplied vector", "embedding": rng.standard_normal(cfg.hashing_dims).tolist()},
    ]
    now = T0 + 86_400 * 12.5
    writes = [
        validate_memory_write({"event_id": f"e{i}", "occurred_at": T0 - 86_400 * i, "payload": p})
        for i, p in enumerate(payloads)
    ]
    vectors = content_vectors(writes, embedder)
    asked = questions_vectors(writes, vectors, embedder)
    ids = [w.memory_id for w in writes]
    schema = memory_schema(cfg.hashing_dims)
    one_by_one = rows_to_arrow(
        [new_row(w, ids[i], vectors[i], asked[i], cfg, now) for i, w in enumerate(writes)], schema
    ).to_pylist()
    columnar = new_rows_table(writes, ids, vectors, asked, cfg, now, schema).to_pylist()
    assert columnar == one_by_one
    assert "hunter2" not in columnar[1]["content"] and columnar[1]["entity_refs"] == [
        "db1",
        "deploy.sh",
    ]
    assert len({round(r["trust"], 9) for r in columnar}) == 3  # source and age both count


def test_import_reads_parquet_and_arrow_files_and_names_bad_rows(tmp_path, monkeypatch):
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    monkeypatch.setenv("LOOPWARDEN_MEMORY__URI", str(tmp_path / "store"))
    monkeypatch.setenv("LOOPWARDEN_MEMORY__EMBEDDER", "hashing")
    dims = MemorySettings(embedder="hashing").hashing_dims
    vectors = np.random.default_rng(1).standard_normal((3, dims)).astype(np.float32)
    table = pa.table(
        {
            "event_id": ["p1", "p2", "p3"],
            "occurred_at": [T0, T0, T0],
            "content": ["ci caches pip downloads", f"login password={SECRET}", ""],
            "tags": [["ci"], [], None],
            "embedding": pa.array(list(vectors), pa.list_(pa.float32())),
        }
    )
    parquet, arrow = tmp_path / "memories.parquet", tmp_path / "memories.arrow"
    pq.write_table(table, parquet)
    with pa.ipc.new_file(arrow, table.schema) as writer:
        writer.write_table(table)
    runner = CliRunner()
    first = runner.invoke(main, ["memory", "import", str(parquet)])
    assert first.exit_code == 4, first.output
    assert "row 2: payload.content: String should have at least 1 character" in first.output
    assert orjson.loads(first.stdout.splitlines()[-1]) == {
        "imported": 2,
        "already_stored": 0,
        "rejected": 1,
    }
    again = runner.invoke(main, ["memory", "import", str(arrow)])  # the same rows, as Arrow
    assert orjson.loads(again.stdout.splitlines()[-1])["already_stored"] == 2
    stored = MemoryTable(str(tmp_path / "store"), dims).table.to_arrow().to_pylist()
    assert sorted(r["content"] for r in stored) == [
        "ci caches pip downloads",
        "login password=[REDACTED]",
    ]
    assert SECRET not in str(stored)
