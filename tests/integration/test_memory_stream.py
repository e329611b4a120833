"""Memory through the stream: writes → LanceDB (real directory, USE embedder) → outcomes.

The worker's app runs in the test's own loop on the real broker (:mod:`.inprocess`: the
app ``loopwarden worker`` builds, with no process start-up and the embedder's weights
loaded once); the storage-outage test runs a worker process, whose log it reads."""

from __future__ import annotations

import asyncio
import os
import uuid
from dataclasses import fields
from pathlib import Path

import pytest

from loopwarden.agents.memory.maintenance import MaintenanceReport
from loopwarden.settings import Settings
from loopwarden.storage.memory_table import MemoryTable
from loopwarden.streams.client.json_subscribers import AnalysisSubscriber, MemoryOutcomeSubscriber
from loopwarden.streams.client.publisher import AsyncPublisher

from .conftest import isolated_settings
from .inprocess import running_app

pytestmark = pytest.mark.integration

WRITES = [
    (
        "m1",
        "The user prefers SQLite for local storage",
        {
            "tags": ["database", "preference"],
            "potential_questions": ["Which database does the user prefer?"],
        },
    ),
    (
        "m2",
        "The user prefers SQLite for local storage.",
        {
            "tags": ["database", "preference"],
            "potential_questions": ["Which database does the user prefer?"],
        },
    ),
    (
        "m3",
        "The user does not prefer SQLite for local storage",
        {"tags": ["database"], "potential_questions": ["Does the user avoid SQLite?"]},
    ),
    ("m4", "Deploy with password: hunter2 on host db1", {"tags": ["deploy"]}),
    (
        "m5",
        "deploy.sh fails with permission denied until chmod +x deploy.sh is run",
        {"tags": ["deploy", "permissions"], "potential_questions": ["Why does deploy fail?"]},
    ),
]


def facts_with_vectors(scope: str, count: int, seed: int) -> list[dict]:
    """``remember_many`` items of ``scope`` carrying their own 512-d vectors."""
    import numpy as np

    vectors = np.random.default_rng(seed).standard_normal((count, 512)).astype(np.float32)
    return [
        {"content": f"fact {i}", "event_id": f"{scope}-{i}", "scope": scope, "embedding": v}
        for i, v in enumerate(vectors)
    ]


async def publish_all(settings: Settings, scope: str) -> None:
    async with AsyncPublisher(settings) as publisher:
        for event_id, content, fields in WRITES:
            await publisher.remember(content, event_id=f"{scope}-{event_id}", scope=scope, **fields)


class StorageOutage:
    """The memory storage as a symbolic link to its directory, so that it goes away and
    comes back in one atomic step each. A renamed directory was still a writable path:
    the failed index builds of the outage made a new one there, racing the test's
    clean-up (CI of stop 75: ``Directory not empty``)."""

    def __init__(self, uri: str) -> None:
        self.link = Path(uri)
        self.storage = self.link.with_name(f"{self.link.name}-storage")
        self.nowhere = self.link.with_name(f"{self.link.name}-away")
        self.storage.mkdir()
        self.link.symlink_to(self.storage, target_is_directory=True)

    def begin(self) -> None:
        """The storage is away: the link points at nothing."""
        self._point_at(self.nowhere)

    def end(self) -> None:
        """The storage is back, untouched by whatever ran against the dead link."""
        assert not self.nowhere.exists(), "something wrote through the dead link"
        self._point_at(self.storage)

    def _point_at(self, target: Path) -> None:
        swap = self.link.with_name(f"{self.link.name}-swap")
        swap.symlink_to(target, target_is_directory=True)
        os.replace(swap, self.link)


def rows(settings: Settings, scope: str) -> list[tuple]:
    table = MemoryTable(settings.memory.uri, 512, settings.memory.table)
    columns = ["id", "content", "corroboration_count", "contradiction_count", "scope"]
    return sorted(
        (r["id"], r["content"], r["corroboration_count"], r["contradiction_count"])
        for r in table.columns(columns).to_pylist()
        if r["scope"] == scope
    )


async def test_writes_end_as_the_right_rows_and_a_replay_changes_nothing(broker):
    settings = isolated_settings(broker, "memory", ["memory"])
    async with running_app(settings):
        scope = f"s-{uuid.uuid4().hex[:6]}"
        async with MemoryOutcomeSubscriber(settings, scope=scope) as outcomes:
            await publish_all(settings, scope)
            first = {o["event_id"]: o for o in await outcomes.collect(len(WRITES), 90)}
            stored = rows(settings, scope)
            await publish_all(settings, scope)  # the same events again
            again = await outcomes.collect(len(WRITES), 90)
        m1 = first[f"{scope}-m1"]["memory_id"]
        assert first[f"{scope}-m2"]["status"] == "duplicate"
        assert first[f"{scope}-m2"]["duplicate_of"] == m1
        assert first[f"{scope}-m3"]["status"] == "stored_with_conflicts"
        assert first[f"{scope}-m3"]["conflicts"][0]["memory_id"] == m1
        assert first[f"{scope}-m4"]["redacted"] is True
        assert len(stored) == 4
        assert not any("hunter2" in content for _, content, _, _ in stored)
        by_id = {r[0]: r for r in stored}
        assert by_id[m1][2:] == (1, 1)  # corroborated once, contradicted once
        assert {o["status"] for o in again} == {"already_stored"}
        assert rows(settings, scope) == stored


async def test_a_critical_reflection_comes_back_with_relevant_memories(broker):
    settings = isolated_settings(broker, "memctx")
    async with running_app(settings):
        async with MemoryOutcomeSubscriber(settings, scope="default") as outcomes:
            await publish_all(settings, "default")
            await outcomes.collect(len(WRITES), 90)
        loop_id = f"deployer-{uuid.uuid4().hex[:6]}"
        async with AnalysisSubscriber(settings, loop_id=loop_id) as analyses:
            async with AsyncPublisher(settings) as publisher:
                await publisher.publish(
                    loop_id, "deploy", success=False, error_message="permission denied: ./deploy.sh"
                )
            (analysis,) = await analyses.collect(1, 60)
        assert analysis["level"] == "critical"
        assert analysis["memory_budget_bytes"] == 10 * 1024
        context = analysis["memory_context"]
        assert "chmod +x deploy.sh" in context
        assert len(context.encode()) <= 10 * 1024


async def test_maintenance_runs_on_the_leader_and_reports(broker):
    settings = isolated_settings(broker, "maint", ["memory"])
    settings = settings.model_copy(
        update={"memory": settings.memory.model_copy(update={"maintenance_interval_s": 1.0})}
    )
    async with running_app(settings):
        async with MemoryOutcomeSubscriber(settings, scope="default") as outcomes:
            await publish_all(settings, "default")
            await outcomes.collect(len(WRITES), 90)
        async with MemoryOutcomeSubscriber(settings, scope="*") as reports:
            (report,) = await reports.collect(1, 60)
        assert report["type"] == "maintenance_report"
        assert set(report) >= {f.name for f in fields(MaintenanceReport)}


async def test_failures_are_learned_and_a_completed_task_recalls_them(broker):
    settings = isolated_settings(broker, "learn")
    async with running_app(settings):
        loop_id = f"learner-{uuid.uuid4().hex[:6]}"
        async with MemoryOutcomeSubscriber(settings, scope="default") as outcomes:
            async with AsyncPublisher(settings) as publisher:
                await publisher.publish(
                    loop_id,
                    "migrate",
                    params={"db": "orders"},
                    success=False,
                    error_message="lock timeout on table orders",
                )
            (outcome,) = await outcomes.collect(1, 60)
        assert outcome["status"] == "stored"
        table = MemoryTable(settings.memory.uri, 512, settings.memory.table)
        (row,) = table.get([outcome["memory_id"]])
        assert row["content"].startswith(f"ReAct iteration 1/{loop_id}: action migrate")
        assert row["source_loop_id"] == loop_id
        async with AnalysisSubscriber(settings, loop_id=loop_id) as analyses:
            async with AsyncPublisher(settings) as publisher:
                await publisher.publish(
                    loop_id, "finish", terminated=True, params={"task": "migrate the orders table"}
                )

            async def completion():
                async for analysis in analyses:
                    if analysis["kind"] == "task_completion":
                        return [analysis]
                return []

            found = await asyncio.wait_for(completion(), 60)
        assert found and found[0]["memory_budget_bytes"] == 4096
        assert "lock timeout on table orders" in found[0]["memory_context"]


async def test_a_bad_write_is_rejected_alone(broker):
    settings = isolated_settings(broker, "badwrite", ["memory"])
    async with running_app(settings):
        scope = f"bad-{uuid.uuid4().hex[:6]}"
        async with MemoryOutcomeSubscriber(settings, scope=scope) as outcomes:
            async with AsyncPublisher(settings) as publisher:
                await publisher.remember(
                    "a fine memory about the build cache", scope=scope, event_id=f"{scope}-good-1"
                )
                await publisher.remember(
                    "a memory with a wrong vector",
                    scope=scope,
                    embedding=[0.1, 0.2, 0.3],
                    event_id=f"{scope}-bad",
                )
                await publisher.remember(
                    "another fine memory about flaky tests", scope=scope, event_id=f"{scope}-good-2"
                )
            received = {o["event_id"]: o for o in await outcomes.collect(3, 90)}
        assert received[f"{scope}-bad"]["status"] == "rejected"
        assert "embedding has 3 dimensions" in received[f"{scope}-bad"]["reason"]
        assert received[f"{scope}-good-1"]["status"].startswith("stored")
        assert received[f"{scope}-good-2"]["status"].startswith("stored")


async def test_a_storage_outage_pauses_memory_writes_instead_of_rejecting_them(
    broker, worker_factory
):
    """Issue 15.4: a transient LanceDB/disk failure made writes 'rejected' for good.
    The leader's index upkeep fails meanwhile too, and must not stop for good (an
    exception used to end Faust's timer loop). Issue 33: the pause says so — a log
    line, /ready unready with the reason — and /ready comes back with the storage."""
    import time

    import aiohttp

    from loopwarden.streams.tools.broker import free_port

    settings = isolated_settings(broker, "mem-outage")
    index = settings.memory.index.model_copy(
        update={"vector_min_rows": 2, "upkeep_interval_s": 0.3}
    )
    settings = settings.model_copy(
        update={
            "memory": settings.memory.model_copy(update={"embedder": "hashing", "index": index}),
            "roles": frozenset({"memory"}),
            "web_port": free_port(),
        }
    )
    ready_url = f"http://127.0.0.1:{settings.web_port}/ready"
    outage = StorageOutage(settings.memory.uri)
    worker = worker_factory(settings)
    scope = f"outage-{uuid.uuid4().hex[:6]}"

    async def ready(session):
        async with session.get(ready_url) as response:
            return response.status, (await response.json())["status"]

    async with (
        MemoryOutcomeSubscriber(settings, scope=scope) as outcomes,
        AsyncPublisher(settings) as publisher,
        aiohttp.ClientSession() as session,
    ):
        await publisher.remember("the first fact", event_id=f"{scope}-1", scope=scope)
        (first,) = await outcomes.collect(1, 90)
        assert first["status"] == "stored"
        assert await ready(session) == (200, "ready")
        outage.begin()  # the storage goes away
        await publisher.remember("the second fact", event_id=f"{scope}-2", scope=scope)
        deadline = time.monotonic() + 60
        while "store_memories: paused at" not in worker.log() and time.monotonic() < deadline:
            await asyncio.sleep(0.2)  # waiting on the worker's own report of the pause
        assert "store_memories: paused at" in worker.log(), worker.log()[-3000:]
        assert "storage unavailable" in worker.log()
        status, why = await ready(session)
        assert status == 503 and why.startswith("store_memories paused: StorageUnavailable"), why
        while "memory index upkeep failed" not in worker.log() and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        assert "memory index upkeep failed" in worker.log(), worker.log()[-3000:]
        outage.end()  # and comes back
        (second,) = await outcomes.collect(1, 120)
        assert "store_memories: resumed after" in worker.log(), worker.log()[-3000:]
        assert await ready(session) == (200, "ready")
    assert (second["event_id"], second["status"]) == (f"{scope}-2", "stored")
    table = MemoryTable(settings.memory.uri, settings.memory.hashing_dims, settings.memory.table)
    deadline = time.monotonic() + 60  # two rows: the upkeep that outlived the outage indexes them
    while not table.indexes.has_vector_index and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
        table.indexes._columns = None  # list the indexes again
    assert table.indexes.has_vector_index, worker.log()[-3000:]


@pytest.mark.parametrize("encoding", ["arrow", "json"])
async def test_bulk_writes_with_deferred_checks_store_every_vector_once(broker, encoding):
    """remember_many: Arrow records (columns) or JSON arrays (base64 vectors), checks
    deferred; the outcomes of an Arrow record come as arrays, read one by one."""
    import numpy as np

    from loopwarden.schemas import codec
    from loopwarden.streams.client.subscriber import DeadLetterSubscriber

    settings = isolated_settings(broker, "bulk", ["memory"])
    index = settings.memory.index.model_copy(
        update={"vector_min_rows": 200, "upkeep_interval_s": 0.5}
    )
    memory = settings.memory.model_copy(update={"write_checks": "deferred", "index": index})
    settings = settings.model_copy(update={"memory": memory})
    async with running_app(settings):
        scope = f"bulk-{uuid.uuid4().hex[:6]}"
        rng = np.random.default_rng(3)
        vectors = rng.standard_normal((300, 512)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        items = [
            {
                "content": f"service {i} needs flag {i % 7} before it starts",
                "event_id": f"{scope}-{i}",
                "scope": scope,
                "embedding": vectors[i] if i % 2 else vectors[i].tolist(),  # numpy or numbers
            }
            for i in range(300)
        ]

        def raw(event_id: str, embedding: object) -> dict:
            payload = {"content": event_id, "scope": scope, "embedding": embedding}
            return {"event_id": event_id, "occurred_at": 1.0, "payload": payload}

        bad_record = codec.dumps(
            [raw(f"{scope}-ok", vectors[0].tolist()), raw(f"{scope}-bad", "not base64!")]
        )
        async with (
            MemoryOutcomeSubscriber(settings, scope=scope) as outcomes,
            DeadLetterSubscriber(settings, loop_id=scope) as letters,
            AsyncPublisher(settings, topic=settings.topics.memory_writes) as publisher,
        ):
            ids = await publisher.remember_many(items, per_record=64, encoding=encoding)
            position = await publisher.send_raw(bad_record, scope.encode())
            first = {o["event_id"]: o for o in await outcomes.collect(301, 120)}
            (letter,) = await letters.collect(1, 60)
            again = await publisher.remember_many(items[:10], per_record=64, encoding=encoding)
            replayed = await outcomes.collect(10, 60)
        assert ids == [item["event_id"] for item in items]
        assert again == ids[:10]
        assert {first[i]["status"] for i in ids} == {"stored"}
        assert {first[i]["checks"] for i in ids} == {"deferred"}
        assert first[f"{scope}-ok"]["status"] == "stored"
        assert {o["status"] for o in replayed} == {"already_stored"}
        assert (
            letter.batch_index == 1 and (letter.source.partition, letter.source.offset) == position
        )
        assert "base64" in letter.message
        table = MemoryTable(settings.memory.uri, 512, settings.memory.table)
        stored = table.columns(["content", "vector", "scope"]).to_pylist()
        mine = {r["content"]: r["vector"] for r in stored if r["scope"] == scope}
        assert len(mine) == 301 and f"{scope}-bad" not in mine
        for i in (0, 1, 299):  # each vector as sent (renormalised), whichever form it travelled in
            np.testing.assert_allclose(np.asarray(mine[items[i]["content"]]), vectors[i], rtol=1e-6)
        # the group leader's timer builds the indexes beside the writes (writers build none)
        deadline = asyncio.get_running_loop().time() + 60
        while "vector" not in (
            indexed := {c for i in table.table.list_indices() for c in i.columns}
        ):
            assert asyncio.get_running_loop().time() < deadline, f"indexes after 60 s: {indexed}"
            await asyncio.sleep(0.2)
        assert {"id", "scope", "content"} <= indexed


async def test_an_arrow_record_from_another_client_is_checked_redacted_and_answered(broker):
    """A librdkafka producer sends an Arrow IPC record written with pyarrow (as a Java or
    Go service would with its Arrow library): no publisher-side checks or redaction."""
    import numpy as np
    import pyarrow as pa
    from confluent_kafka import Producer

    from loopwarden.schemas.memory_columns import to_ipc
    from loopwarden.streams.client.subscriber import DeadLetterSubscriber

    settings = isolated_settings(broker, "arrow", ["memory"])
    memory = settings.memory.model_copy(update={"write_checks": "deferred"})
    settings = settings.model_copy(update={"memory": memory})
    async with running_app(settings):
        scope = f"arrow-{uuid.uuid4().hex[:6]}"
        vectors = np.random.default_rng(4).standard_normal((4, 512)).astype(np.float32)
        vectors[3, :] = 0.0
        table = pa.table(
            {
                "event_id": [f"{scope}-{i}" for i in range(4)],
                "occurred_at": pa.array([1.7e9, 1.7e9 + 1, 1.7e9 + 2, 1.7e9 + 3]),
                "content": [
                    "the staging database lives on db2",
                    "deploy with password=Hunter2Staging then restart",
                    "a row with a score out of range",
                    "a row without a vector is embedded by the worker",
                ],
                "scope": [scope] * 4,
                "scores": pa.array(
                    [{"c": 0.9}, None, {"c": 7.0}, None], pa.struct([("c", pa.float64())])
                ),
                "embedding": pa.array(
                    [vectors[0], vectors[1], vectors[2], None], pa.list_(pa.float32())
                ),
            }
        )
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0})
        async with (
            MemoryOutcomeSubscriber(settings, scope=scope) as outcomes,
            DeadLetterSubscriber(settings, loop_id=scope) as letters,
        ):
            producer.produce(settings.topics.memory_writes, value=to_ipc(table), key=scope.encode())
            assert producer.flush(30) == 0
            answered = {o["event_id"]: o for o in await outcomes.collect(3, 120)}
            (letter,) = await letters.collect(1, 60)
        assert {answered[f"{scope}-{i}"]["status"] for i in (0, 1, 3)} == {"stored"}
        assert answered[f"{scope}-1"]["redacted"] is True
        assert answered[f"{scope}-0"]["redacted"] is False
        assert letter.batch_index == 2 and letter.reason == "validation"
        assert "payload.scores.c: Input should be less than or equal to 1" in letter.message
        stored = MemoryTable(settings.memory.uri, 512, settings.memory.table).columns(
            ["id", "content", "c", "scope", "vector"]
        )
        mine = {r["content"]: r for r in stored.to_pylist() if r["scope"] == scope}
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


async def test_a_batch_is_applied_once_its_records_hold_batch_max_bytes(broker):
    """Arrow records fill a batch by bytes long before batch_max_writes records: the
    writes are applied without waiting out batch_within_s (here 120 s)."""

    settings = isolated_settings(broker, "bytes", ["memory"])
    memory = settings.memory.model_copy(
        update={
            "write_checks": "deferred",
            "batch_max_writes": 10_000,
            "batch_within_s": 120.0,
            "batch_max_bytes": 1,  # every record is a batch of its own at once
        }
    )
    settings = settings.model_copy(update={"memory": memory})
    async with running_app(settings):
        scope = f"bytes-{uuid.uuid4().hex[:6]}"
        items = facts_with_vectors(scope, 120, seed=5)
        async with (
            MemoryOutcomeSubscriber(settings, scope=scope) as outcomes,
            AsyncPublisher(settings, topic=settings.topics.memory_writes) as publisher,
        ):
            started = asyncio.get_running_loop().time()
            await publisher.remember_many(items, per_record=20)  # records of ~45 KB
            answered = await outcomes.collect(len(items), 90)
            took = asyncio.get_running_loop().time() - started
        assert {o["event_id"] for o in answered} == {item["event_id"] for item in items}
        assert took < 90  # never waited for the 120 s window


async def test_arrow_records_go_through_the_checked_write_path_too(broker):
    """With memory.write_checks=each (the default) an Arrow record's rows are checked one
    by one like JSON writes: a near-duplicate corroborates, a contradiction is related."""
    settings = isolated_settings(broker, "arrowchecked", ["memory"])
    async with running_app(settings):
        scope = f"ac-{uuid.uuid4().hex[:6]}"
        items = [
            {"event_id": f"{scope}-{event_id}", "content": content, "scope": scope, **fields}
            for event_id, content, fields in WRITES
        ]
        for i, item in enumerate(items):  # event time orders the checks
            item["occurred_at"] = 1_800_000_000.0 + i
        async with (
            MemoryOutcomeSubscriber(settings, scope=scope) as outcomes,
            AsyncPublisher(settings, topic=settings.topics.memory_writes) as publisher,
        ):
            await publisher.remember_many(items)
            first = {o["event_id"]: o for o in await outcomes.collect(len(WRITES), 90)}
        m1 = first[f"{scope}-m1"]["memory_id"]
        assert first[f"{scope}-m2"]["status"] == "duplicate"
        assert first[f"{scope}-m2"]["duplicate_of"] == m1
        assert first[f"{scope}-m3"]["status"] == "stored_with_conflicts"
        assert first[f"{scope}-m4"]["redacted"] is True
        assert "checks" not in first[f"{scope}-m5"]  # checked here, not deferred
        stored = rows(settings, scope)
        assert len(stored) == 4 and not any("hunter2" in content for _, content, _, _ in stored)


async def test_a_stored_batch_is_committed_without_waiting_for_the_commit_interval(broker):
    """A bulk load's offsets move once it is stored, not at the next commit interval
    (here 600 s: before, publish → committed waited up to 2.8 s behind publish → stored)."""

    from loopwarden.streams.tools.replay_reader import wait_until_committed

    settings = isolated_settings(broker, "commit", ["memory"])
    settings = settings.model_copy(
        update={
            "memory": settings.memory.model_copy(update={"write_checks": "deferred"}),
            "kafka": settings.kafka.model_copy(update={"commit_interval_s": 600.0}),
        }
    )
    async with running_app(settings):
        scope = f"commit-{uuid.uuid4().hex[:6]}"
        items = facts_with_vectors(scope, 300, seed=6)
        async with MemoryOutcomeSubscriber(settings, scope=scope) as outcomes:
            async with AsyncPublisher(settings, topic=settings.topics.memory_writes) as publisher:
                await publisher.remember_many(items, per_record=50)
            assert len(await outcomes.collect(len(items), 90)) == len(items)
        await wait_until_committed(
            settings.kafka.bootstrap_servers, settings.app_id, [settings.topics.memory_writes], 60
        )


async def test_a_failed_action_becomes_a_memory_through_the_lessons_topic(broker):
    """The monitor's lessons go to their own topic, not the clients' memory writes, and
    the memory role stores them within ``memory.lessons_within_s``."""
    from faultsuite.harness import read_json

    settings = isolated_settings(broker, "lessons", ["monitor", "memory"])
    scope = settings.detection.learning_scope
    loop_id = f"lesson-{uuid.uuid4().hex[:6]}"
    async with (
        running_app(settings),
        MemoryOutcomeSubscriber(settings, scope=scope) as outcomes,
    ):
        async with AsyncPublisher(settings) as publisher:
            await publisher.publish(
                loop_id, "deploy", success=False, error_message="permission denied: ./deploy.sh"
            )
        (outcome,) = await outcomes.collect(1, 90)
    assert outcome["status"] == "stored"

    bootstrap = settings.kafka.bootstrap_servers
    (lesson,) = await read_json(bootstrap, settings.topics.memory_lessons)
    assert lesson["event_id"] == outcome["event_id"]
    assert lesson["payload"]["source_loop_id"] == loop_id
    assert "learning_from_failure" in lesson["payload"]["tags"]
    assert await read_json(bootstrap, settings.topics.memory_writes) == []
    stored = rows(settings, scope)
    assert [r[0] for r in stored] == [outcome["memory_id"]]
    assert "permission denied" in stored[0][1]


async def test_a_storage_outage_pauses_the_analysts_memory_reads_instead_of_dead_lettering(
    broker, worker_factory
):
    """Issue 57.6: with the LanceDB store away, reflection requests (whose analyses read
    memories) were dead-lettered as processing errors; reads wait like writes do."""
    import time

    from faultsuite.harness import read_json

    settings = isolated_settings(broker, "read-outage", ["monitor", "analyst", "memory"])
    settings = settings.model_copy(
        update={"memory": settings.memory.model_copy(update={"embedder": "hashing"})}
    )
    outage = StorageOutage(settings.memory.uri)
    worker = worker_factory(settings)
    loop_id = f"reader-{uuid.uuid4().hex[:6]}"
    async with (
        MemoryOutcomeSubscriber(settings, scope="default") as outcomes,
        AnalysisSubscriber(settings, loop_id=loop_id) as analyses,
        AsyncPublisher(settings) as publisher,
    ):
        await publisher.remember("deploy.sh needs chmod +x before it runs", scope="default")
        assert [o["status"] for o in await outcomes.collect(1, 90)] == ["stored"]
        outage.begin()  # the storage goes away
        await publisher.publish(loop_id, "deploy", success=False, error_message="denied")
        deadline = time.monotonic() + 60
        while "analyze_reflections: paused at" not in worker.log() and time.monotonic() < deadline:
            await asyncio.sleep(0.2)  # waiting on the worker's own report of the pause
        assert "analyze_reflections: paused at" in worker.log(), worker.log()[-3000:]
        outage.end()  # and comes back
        (analysis,) = await analyses.collect(1, 120)
    assert "chmod +x" in analysis["memory_context"]
    letters = await read_json(settings.kafka.bootstrap_servers, settings.topics.dead_letter)
    assert letters == [], letters
