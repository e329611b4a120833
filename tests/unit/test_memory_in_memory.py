"""Memory's processing driven in memory: the memory capabilities' own batch step over a
real LanceDB directory (the USE embedder), the records built as the client builds them,
the outcomes read from the in-memory topics.

These were broker tests (tests/integration/test_memory_stream.py), each starting a
worker for what is the capability's processing: de-duplication and conflicts, a bad
write rejected alone, bulk writes in both encodings, an Arrow record from another
client, the monitor's lessons. What stays on the broker is the wiring: batching by
time and bytes, commits, the storage outage's pause, the leader's upkeep timers, the
analyst's reads.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from memory_facts import WRITES

from loopwarden.schemas import codec
from loopwarden.schemas.memory_columns import to_ipc
from loopwarden.settings import Settings
from loopwarden.storage.memory_table import MemoryTable
from loopwarden.streams.runtime.in_memory import InMemoryWorker
from loopwarden.worker import in_memory_worker

SCOPE = "team"


def memory_worker(tmp_path: Path, roles: tuple[str, ...] = ("memory",), **memory: object):
    settings = Settings().namespaced("memory-in-memory", partitions=4)
    updates = {"uri": str(tmp_path / "memory"), **memory}
    detection = settings.detection.model_copy(update={"profile": "seed"})
    settings = settings.model_copy(
        update={
            "roles": frozenset(roles),
            "memory": settings.memory.model_copy(update=updates),
            "detection": detection,
            "data_dir": str(tmp_path),
        }
    )
    return in_memory_worker(settings)


def outcomes(worker: InMemoryWorker) -> dict[str, dict]:
    """Every memory outcome by event id (an Arrow record's come as arrays)."""
    found: dict[str, dict] = {}
    for value in worker.output("memory_outcomes"):
        for outcome in value if isinstance(value, list) else [value]:
            found[outcome["event_id"]] = outcome
    return found


def rows(worker: InMemoryWorker, scope: str = SCOPE) -> list[tuple]:
    memory = worker.settings.memory
    table = MemoryTable(memory.uri, 512, memory.table)
    columns = ["id", "content", "corroboration_count", "contradiction_count", "scope"]
    return sorted(
        (r["id"], r["content"], r["corroboration_count"], r["contradiction_count"])
        for r in table.columns(columns).to_pylist()
        if r["scope"] == scope
    )


def remember_all(worker: InMemoryWorker) -> None:
    for event_id, content, fields in WRITES:
        worker.remember(content, event_id=event_id, scope=SCOPE, **fields)


def test_writes_end_as_the_right_rows_and_the_same_writes_again_change_nothing(tmp_path):
    worker = memory_worker(tmp_path)
    remember_all(worker)
    assert worker.run() == len(WRITES)
    first = outcomes(worker)
    stored = rows(worker)
    remember_all(worker)  # the same events again
    worker.run()
    again = worker.output("memory_outcomes")[len(WRITES) :]

    m1 = first["m1"]["memory_id"]
    assert first["m2"]["status"] == "duplicate" and first["m2"]["duplicate_of"] == m1
    assert first["m3"]["status"] == "stored_with_conflicts"
    assert first["m3"]["conflicts"][0]["memory_id"] == m1
    assert first["m4"]["redacted"] is True
    assert len(stored) == 4 and not any("hunter2" in content for _, content, _, _ in stored)
    by_id = {r[0]: r for r in stored}
    assert by_id[m1][2:] == (1, 1)  # corroborated once, contradicted once
    assert len(again) == len(WRITES) and {o["status"] for o in again} == {"already_stored"}
    assert rows(worker) == stored


def test_a_bad_write_is_rejected_alone(tmp_path):
    worker = memory_worker(tmp_path)
    worker.remember("a fine memory about the build cache", scope=SCOPE, event_id="good-1")
    worker.remember(
        "a memory with a wrong vector", scope=SCOPE, embedding=[0.1, 0.2, 0.3], event_id="bad"
    )
    worker.remember("another fine memory about flaky tests", scope=SCOPE, event_id="good-2")
    worker.run()
    received = outcomes(worker)
    assert received["bad"]["status"] == "rejected"
    assert "embedding has 3 dimensions" in received["bad"]["reason"]
    assert received["good-1"]["status"].startswith("stored")
    assert received["good-2"]["status"].startswith("stored")
    assert worker.dead_lettered() == []


@pytest.mark.parametrize("encoding", ["arrow", "json"])
def test_bulk_writes_with_deferred_checks_store_every_vector_once(tmp_path, encoding):
    """remember_many: Arrow records (columns) or JSON arrays (base64 vectors), checks
    deferred; a record's element that cannot be read is a dead letter of its own."""
    worker = memory_worker(tmp_path, write_checks="deferred")
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((300, 512)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    items = [
        {
            "content": f"service {i} needs flag {i % 7} before it starts",
            "event_id": f"bulk-{i}",
            "scope": SCOPE,
            "embedding": vectors[i] if i % 2 else vectors[i].tolist(),  # numpy or numbers
        }
        for i in range(300)
    ]

    def raw(event_id: str, embedding: object) -> dict:
        payload = {"content": event_id, "scope": SCOPE, "embedding": embedding}
        return {"event_id": event_id, "occurred_at": 1.0, "payload": payload}

    ids = worker.remember_many(items, per_record=64, encoding=encoding)
    bad = codec.dumps([raw("ok", vectors[0].tolist()), raw("bad", "not base64!")])
    sent = worker.send(worker.settings.topics.memory_writes, bad, SCOPE.encode())
    worker.run()
    first = outcomes(worker)
    again = worker.remember_many(items[:10], per_record=64, encoding=encoding)
    worker.run()

    assert ids == [item["event_id"] for item in items] and again == ids[:10]
    assert {first[i]["status"] for i in ids} == {"stored"}
    assert {first[i]["checks"] for i in ids} == {"deferred"}
    assert first["ok"]["status"] == "stored" and "bad" not in first
    assert {outcomes(worker)[i]["status"] for i in ids[:10]} == {"already_stored"}
    (letter,) = worker.dead_lettered()
    assert letter.batch_index == 1 and letter.source.offset == sent.offset
    assert "base64" in letter.message
    memory = worker.settings.memory
    stored = MemoryTable(memory.uri, 512, memory.table).columns(["content", "vector", "scope"])
    mine = {r["content"]: r["vector"] for r in stored.to_pylist() if r["scope"] == SCOPE}
    assert len(mine) == 301 and "bad" not in mine
    for i in (0, 1, 299):  # each vector as sent (renormalised), whichever form it travelled in
        np.testing.assert_allclose(np.asarray(mine[items[i]["content"]]), vectors[i], rtol=1e-6)


def test_an_arrow_record_from_another_client_is_checked_redacted_and_answered(tmp_path):
    """An Arrow IPC record written with pyarrow (as a Java or Go service would with its
    Arrow library): no publisher-side checks or redaction."""
    worker = memory_worker(tmp_path, write_checks="deferred")
    vectors = np.random.default_rng(4).standard_normal((4, 512)).astype(np.float32)
    table = pa.table(
        {
            "event_id": [f"arrow-{i}" for i in range(4)],
            "occurred_at": pa.array([1.7e9, 1.7e9 + 1, 1.7e9 + 2, 1.7e9 + 3]),
            "content": [
                "the staging database lives on db2",
                "deploy with password=Hunter2Staging then restart",
                "a row with a score out of range",
                "a row without a vector is embedded by the worker",
            ],
            "scope": [SCOPE] * 4,
            "scores": pa.array(
                [{"c": 0.9}, None, {"c": 7.0}, None], pa.struct([("c", pa.float64())])
            ),
            "embedding": pa.array(
                [vectors[0], vectors[1], vectors[2], None], pa.list_(pa.float32())
            ),
        }
    )
    worker.send(worker.settings.topics.memory_writes, to_ipc(table), SCOPE.encode())
    worker.run()
    answered = outcomes(worker)

    assert {answered[f"arrow-{i}"]["status"] for i in (0, 1, 3)} == {"stored"}
    assert answered["arrow-1"]["redacted"] is True and answered["arrow-0"]["redacted"] is False
    (letter,) = worker.dead_lettered()
    assert letter.batch_index == 2 and letter.reason == "validation"
    assert "payload.scores.c: Input should be less than or equal to 1" in letter.message
    memory = worker.settings.memory
    stored = MemoryTable(memory.uri, 512, memory.table).columns(
        ["id", "content", "c", "scope", "vector"]
    )
    mine = {r["content"]: r for r in stored.to_pylist() if r["scope"] == SCOPE}
    assert set(mine) == {
        "the staging database lives on db2",
        "deploy with password=[REDACTED] then restart",
        "a row without a vector is embedded by the worker",
    }
    assert mine["the staging database lives on db2"]["c"] == 0.9
    vector = np.asarray(mine["the staging database lives on db2"]["vector"])
    np.testing.assert_allclose(vector, vectors[0] / np.linalg.norm(vectors[0]), rtol=1e-5)
    embedded = np.asarray(mine["a row without a vector is embedded by the worker"]["vector"])
    assert abs(np.linalg.norm(embedded) - 1.0) < 1e-3  # the worker's embedder filled it in


def test_arrow_records_go_through_the_checked_write_path_too(tmp_path):
    """With memory.write_checks=each (the default) an Arrow record's rows are checked one
    by one like JSON writes: a near-duplicate corroborates, a contradiction is related."""
    worker = memory_worker(tmp_path)
    items = [
        {"event_id": event_id, "content": content, "scope": SCOPE, **fields}
        for event_id, content, fields in WRITES
    ]
    for i, item in enumerate(items):  # event time orders the checks
        item["occurred_at"] = 1_800_000_000.0 + i
    worker.remember_many(items, encoding="arrow")
    worker.run()
    first = outcomes(worker)

    m1 = first["m1"]["memory_id"]
    assert first["m2"]["status"] == "duplicate" and first["m2"]["duplicate_of"] == m1
    assert first["m3"]["status"] == "stored_with_conflicts"
    assert first["m4"]["redacted"] is True
    assert "checks" not in first["m5"]  # checked here, not deferred
    stored = rows(worker)
    assert len(stored) == 4 and not any("hunter2" in content for _, content, _, _ in stored)


def test_a_failed_action_becomes_a_memory_through_the_lessons_topic(tmp_path):
    """The monitor's lessons go to their own topic, not the clients' memory writes, and
    the memory role's lesson agent stores them."""
    worker = memory_worker(tmp_path, roles=("monitor", "memory"))
    scope = worker.settings.detection.learning_scope
    worker.publish("lesson-1", "deploy", success=False, error_message="permission denied: ./x")
    worker.run()

    (lesson,) = worker.output("memory_lessons")
    (outcome,) = worker.output("memory_outcomes")
    assert outcome["status"] == "stored" and lesson["event_id"] == outcome["event_id"]
    assert lesson["payload"]["source_loop_id"] == "lesson-1"
    assert "learning_from_failure" in lesson["payload"]["tags"]
    assert worker.topics.records(worker.settings.topics.memory_writes) == []
    stored = rows(worker, scope)
    assert [r[0] for r in stored] == [outcome["memory_id"]]
    assert "permission denied" in stored[0][1]
