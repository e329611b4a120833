"""Arrow records stored by ``MemoryImporter.import_columns``: the same rows and outcomes
as the same writes stored one model at a time by ``import_writes`` (real LanceDB)."""

from __future__ import annotations

import numpy as np
import pytest

from loopwarden.agents.memory.embedding import HashingEmbedder
from loopwarden.agents.memory.importer import MemoryImporter
from loopwarden.schemas.memory_columns import check_columns
from loopwarden.settings import MemorySettings
from loopwarden.storage.memory_table import MemoryTable
from loopwarden.streams.client.memory_writes import make_memory_write, memory_columns, writes_table

DIMS = 16
NOW = 1_800_000_000.0


def items() -> list[dict]:
    rng = np.random.default_rng(11)
    unit = rng.standard_normal(DIMS).astype(np.float32)
    unit /= np.linalg.norm(unit)
    out = []
    for i in range(12):
        item: dict = {
            "event_id": f"e{i}",
            "occurred_at": NOW - 86_400 * i,
            "content": f"password=hunter{i}xyz and more" if i % 4 == 0 else f"plain fact {i}",
            "tags": ["t", f"tag{i % 3}"],
            "entity_refs": ["PostgreSQL", "API"] if i % 2 else [],
            "scores": {"c": 0.1 * (i % 10), "p": 0.9},
        }
        if i % 3 == 1:
            item["potential_questions"] = [f"what is fact {i}?"]
        if i % 5 == 0:
            item["importance"] = 0.25
        if i % 3 != 2:  # every third write is embedded by the store
            item["embedding"] = unit if i == 1 else rng.standard_normal(DIMS).astype(np.float32)
        out.append(item)
    out.append({**out[3], "content": "a later write of the same event"})  # same id: once
    return out


def stored(table: MemoryTable) -> dict[str, dict]:
    rows = table.table.to_arrow().to_pylist()
    for row in rows:
        row.pop("updated_at")
    return {row["id"]: row for row in rows}


def test_columns_store_the_rows_and_outcomes_the_writes_do(tmp_path):
    cfg = MemorySettings(write_checks="deferred")
    embedder = HashingEmbedder(DIMS)
    by_writes = MemoryTable(str(tmp_path / "writes"), DIMS)
    by_columns = MemoryTable(str(tmp_path / "columns"), DIMS)
    writes = [make_memory_write(**item) for item in items()]
    columns, _ = memory_columns(items())
    expected = MemoryImporter(by_writes, embedder, cfg).import_writes(writes, NOW)
    (got,) = MemoryImporter(by_columns, embedder, cfg).import_columns([columns], NOW)
    assert got == expected
    assert {o["status"] for o in got} == {"stored", "already_stored"}
    assert sum(o["redacted"] for o in got) == 3  # e0, e4, e8
    rows, want = stored(by_columns), stored(by_writes)
    assert rows.keys() == want.keys() and len(rows) == 12
    for memory_id, row in rows.items():
        assert row == want[memory_id], memory_id
    again = MemoryImporter(by_columns, embedder, cfg).import_columns([columns], NOW)
    assert {o["status"] for o in again[0]} == {"already_stored"}


def test_a_vector_of_another_size_is_rejected_alone_and_unredacted_columns_are_refused(
    tmp_path,
):
    cfg = MemorySettings(write_checks="deferred")
    table = MemoryTable(str(tmp_path / "store"), DIMS)
    importer = MemoryImporter(table, HashingEmbedder(DIMS), cfg)
    writes = [
        make_memory_write("right size", event_id="ok", embedding=np.ones(DIMS)),
        make_memory_write("wrong size", event_id="bad", embedding=np.ones(DIMS + 1)),
    ]
    (outcomes,) = importer.import_columns([check_columns(writes_table(writes)).columns], NOW)
    assert [o["status"] for o in outcomes] == ["stored", "rejected"]
    assert outcomes[1]["reason"] == (
        f"ValueError: event bad: embedding has {DIMS + 1} dimensions, the memory table {DIMS}"
    )
    assert table.count() == 1
    unredacted = check_columns(writes_table(writes[:1]), redacted=False).columns
    with pytest.raises(ValueError, match="must be redacted"):
        importer.import_columns([unredacted], NOW)


def test_a_unit_vector_is_stored_as_sent(tmp_path):
    vector = np.random.default_rng(2).standard_normal(DIMS).astype(np.float32)
    vector /= np.linalg.norm(vector)
    table = MemoryTable(str(tmp_path / "store"), DIMS)
    importer = MemoryImporter(table, HashingEmbedder(DIMS), MemorySettings())
    columns, _ = memory_columns([{"content": "unit", "embedding": vector}])
    importer.import_columns([columns], NOW)
    (row,) = table.table.to_arrow().to_pylist()
    assert np.asarray(row["vector"], dtype=np.float32).tobytes() == vector.tobytes()
