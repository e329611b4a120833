"""Memory's batches without a broker: records in (as the agent reads them), a real LanceDB
directory written, outcomes out (:class:`~loopwarden.agents.memory.batches.MemoryBatchWriter`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from loopwarden.agents.memory.batches import MemoryBatchWriter
from loopwarden.agents.memory.records import inputs_of
from loopwarden.agents.memory.service import MemoryService
from loopwarden.errors import StorageUnavailableError
from loopwarden.schemas import codec
from loopwarden.schemas.dead_letter import SourcePosition
from loopwarden.schemas.memory_columns import to_ipc
from loopwarden.settings import MemorySettings
from loopwarden.streams.runtime.records import Record


def record(value: bytes, offset: int = 0) -> Record:
    return Record(value, b"default", [], SourcePosition("memory-writes", 0, offset, None))


def write(event_id: str, at: float, content: str, **payload: object) -> bytes:
    body = {"content": content, "scope": "team", **payload}
    return codec.dumps({"event_id": event_id, "occurred_at": at, "payload": body})


def arrow(*rows: tuple[str, float, str, str]) -> bytes:
    columns = {
        "event_id": [r[0] for r in rows],
        "occurred_at": [r[1] for r in rows],
        "content": [r[2] for r in rows],
        "scope": [r[3] for r in rows],
    }
    return to_ipc(pa.table(columns))


def writer(tmp_path: Path, checks: str = "each") -> MemoryBatchWriter:
    settings = MemorySettings(
        uri=str(tmp_path / "lancedb"), embedder="hashing", write_checks=checks
    )
    return MemoryBatchWriter(MemoryService(settings))


@pytest.mark.parametrize("checks", ["each", "deferred"])
def test_a_batch_is_stored_once_and_a_replayed_batch_stores_nothing_again(tmp_path, checks):
    records = [
        record(write("w1", 1.0, "the build cache lives in /var/cache/build")),
        record(arrow(("a1", 2.0, "flaky tests retry twice", "team"), ("a2", 3.0, "x", "ops")), 1),
    ]
    batches = writer(tmp_path, checks)
    first = batches.write(inputs_of(records))
    assert [o["event_id"] for o in first.every()] == ["w1", "a1", "a2"]
    assert first.rows_written() == 3 and all(o["type"] == "memory_outcome" for o in first.every())
    # one output per JSON write, one array per scope of an Arrow record
    shapes = [
        (name, len(v) if isinstance(v, list) else v["event_id"]) for name, v in first.outputs()
    ]
    assert shapes == [("memory_outcomes", "w1"), ("memory_outcomes", 1), ("memory_outcomes", 1)]

    again = batches.write(inputs_of(records))  # a batch retried after a pause
    assert again.statuses() == {"already_stored": 3} and again.rows_written() == 0
    assert batches.service.table.count() == 3
    assert [o["outcome_id"] for o in again.every()] == [o["outcome_id"] for o in first.every()]


def test_a_write_that_fails_by_itself_is_rejected_and_the_rest_of_the_batch_stored(tmp_path):
    records = [
        record(write("good-1", 1.0, "a fine memory about the build cache")),
        record(write("bad", 2.0, "a memory with a wrong vector", embedding=[0.1, 0.2, 0.3]), 1),
        record(write("good-2", 3.0, "another fine memory about flaky tests"), 2),
    ]
    outcomes = writer(tmp_path).write(inputs_of(records))
    by_id = {o["event_id"]: o for o in outcomes.every()}
    assert by_id["bad"]["status"] == "rejected"
    assert "embedding has 3 dimensions" in by_id["bad"]["reason"]
    assert by_id["good-1"]["status"].startswith("stored")
    assert by_id["good-2"]["status"].startswith("stored")
    assert outcomes.rows_written() == 2


def test_storage_away_is_raised_for_the_runner_to_pause_not_rejected(tmp_path):
    batches = writer(tmp_path)
    batches.write(inputs_of([record(write("w1", 1.0, "opens the table"))]))
    uri = tmp_path / "lancedb"
    uri.rename(tmp_path / "away")  # the storage goes away
    with pytest.raises(StorageUnavailableError):
        batches.write(inputs_of([record(write("w2", 2.0, "cannot be written now"))]))
    shutil.rmtree(uri, ignore_errors=True)
    (tmp_path / "away").rename(uri)  # and comes back
    stored = batches.write(inputs_of([record(write("w2", 2.0, "cannot be written now"))]))
    assert stored.statuses() == {"stored": 1} and batches.service.table.count() == 2
