"""Memory's wiring through the stream: writes → LanceDB (real directory, USE embedder) →
outcomes, where the broker and the worker's agents are what is tested — batching by
time and bytes, commits, the pause of a storage outage, the leader's upkeep timers,
memories in a reflection, the analyst's reads.

What a batch of writes becomes (de-duplication, conflicts, rejections, both bulk
encodings, another client's Arrow record, the monitor's lessons) is the capability's
processing, driven in memory: tests/unit/test_memory_in_memory.py.

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
from memory_facts import WRITES

from loopwarden.agents.memory.maintenance import MaintenanceReport
from loopwarden.settings import Settings
from loopwarden.storage.memory_table import MemoryTable
from loopwarden.streams.client.json_subscribers import AnalysisSubscriber, MemoryOutcomeSubscriber
from loopwarden.streams.client.publisher import AsyncPublisher

from .conftest import isolated_settings
from .inprocess import running_app

pytestmark = pytest.mark.integration


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


async def test_the_leaders_timer_builds_the_indexes_beside_bulk_writes(broker):
    """remember_many with checks deferred: every write stored once, and the group
    leader's upkeep timer (not the writers) builds the vector and scalar indexes.
    The writes' outcomes and rows in both encodings: tests/unit/test_memory_in_memory.py."""
    settings = isolated_settings(broker, "bulk", ["memory"])
    index = settings.memory.index.model_copy(
        update={"vector_min_rows": 200, "upkeep_interval_s": 0.5}
    )
    memory = settings.memory.model_copy(update={"write_checks": "deferred", "index": index})
    settings = settings.model_copy(update={"memory": memory})
    async with running_app(settings):
        scope = f"bulk-{uuid.uuid4().hex[:6]}"
        items = facts_with_vectors(scope, 300, seed=3)
        async with (
            MemoryOutcomeSubscriber(settings, scope=scope) as outcomes,
            AsyncPublisher(settings, topic=settings.topics.memory_writes) as publisher,
        ):
            ids = await publisher.remember_many(items, per_record=64)
            stored = {o["event_id"]: o["status"] for o in await outcomes.collect(300, 120)}
        assert stored == dict.fromkeys(ids, "stored")
        table = MemoryTable(settings.memory.uri, 512, settings.memory.table)
        deadline = asyncio.get_running_loop().time() + 60
        while "vector" not in (
            indexed := {c for i in table.table.list_indices() for c in i.columns}
        ):
            assert asyncio.get_running_loop().time() < deadline, f"indexes after 60 s: {indexed}"
            await asyncio.sleep(0.2)
        assert {"id", "scope", "content"} <= indexed


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
