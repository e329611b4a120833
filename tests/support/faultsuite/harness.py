"""What every fault scenario needs: a broker, workers by pid, a workload with known
outputs, and a way to read back what the workers produced.

Expected outputs come from the same record processors the workers run, offline,
over the same events in each loop's publish order; a scenario compares them
with what is on the output topics once the workers' group has committed
everything.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from test_brokers import kafka_worker_settings, new_test_broker

from loopwarden.agents.capabilities import CAPABILITIES, capability
from loopwarden.agents.monitor.state import LoopState
from loopwarden.cli.runtime import start_worker_process, stop_process
from loopwarden.schemas import codec
from loopwarden.schemas.events import ActionEvent
from loopwarden.settings import Settings
from loopwarden.streams.client.offsets import probe_end_offsets
from loopwarden.streams.client.publisher import make_action_event
from loopwarden.streams.tools.broker import EmbeddedBroker, free_port
from loopwarden.streams.tools.topics import ensure_topics

MONITOR_WARNINGS = frozenset({"action_type_spin", "code_edit_spin", "action_failed"})
ACTION_TYPES = ("search", "read_file", "modify_code", "run_tests", "shell", "write_notes")


@dataclass
class Workload:
    """Events to publish, in order, and memory writes to publish beside them."""

    events: list[ActionEvent]
    memories: list[str] = field(default_factory=list)


def make_workload(
    seed: int,
    loops: int,
    events_per_loop: int,
    *,
    repeat_p: float = 0.6,
    fail_p: float = 0.03,
    memories: int = 0,
) -> Workload:
    """Interleaved loops whose actions repeat their predecessor with ``repeat_p`` (spins)."""
    rng = random.Random(seed)
    tag = f"{seed}-{uuid.uuid4().hex[:6]}"
    last: dict[str, str] = {}
    remaining = {f"loop-{tag}-{i}": events_per_loop for i in range(loops)}
    events: list[ActionEvent] = []
    start = time.time()  # event time near the records' time, as a real agent's
    while remaining:
        loop_id = rng.choice(sorted(remaining))
        remaining[loop_id] -= 1
        if not remaining[loop_id]:
            del remaining[loop_id]
        action = last.get(loop_id) if rng.random() < repeat_p else None
        action = action or rng.choice(ACTION_TYPES)
        last[loop_id] = action
        failed = rng.random() < fail_p
        events.append(
            make_action_event(
                loop_id,
                action,
                occurred_at=start + len(events) * 0.01,
                params={"step": len(events)},
                success=not failed,
                error_message=f"exit code {rng.randint(1, 9)}" if failed else None,
            )
        )
    texts = [
        f"fact {tag} number {i}: build {rng.randint(0, 10**6)} passed" for i in range(memories)
    ]
    return Workload(events, texts)


@dataclass
class Expected:
    """Outputs the detectors produce offline for a workload."""

    warnings: dict[str, dict[str, Any]]
    requests: dict[str, dict[str, Any]]
    lessons: set[str]


def expected_outputs(workload: Workload, settings: Settings) -> Expected:
    """Run the monitor over the workload as the worker would (each loop in publish order)."""
    replay = capability("monitor").replay  # the worker's processor, and its stamp
    assert replay is not None
    monitor = replay.build(settings).monitor
    states: dict[str, LoopState] = {}
    warnings: dict[str, dict[str, Any]] = {}
    requests: dict[str, dict[str, Any]] = {}
    lessons: set[str] = set()
    for event in workload.events:
        state = states.setdefault(event.loop_id, LoopState(event.loop_id))
        findings = monitor.observe(state, event)
        if findings is None:
            continue
        warnings.update((w["warning_id"], codec.loads(codec.dumps(w))) for w in findings.warnings)
        requests.update((r["request_id"], codec.loads(codec.dumps(r))) for r in findings.requests)
        lessons.update(m["event_id"] for m in findings.lessons)
    return Expected(warnings, requests, lessons)


@dataclass
class Comparison:
    """Produced against expected outputs, by id."""

    expected: int
    received: int
    missing: int
    changed: int
    duplicates: int
    loops: dict[str, str] = field(default_factory=dict)
    """For a post-mortem: up to 10 loops with an output missing or changed, and the
    first such output's kind (and what differs, when changed)."""

    @property
    def ok(self) -> bool:
        """Nothing missing, nothing changed (duplicates are same-id redeliveries)."""
        return self.missing == 0 and self.changed == 0


def compare(
    expected: dict[str, dict[str, Any]],
    got: list[dict[str, Any]],
    key: str,
    steps: dict[str, int] | None = None,
) -> Comparison:
    """Compare outputs by their id field ``key``; ``steps`` (event id → its index in its
    loop) says at which of its loop's events the first lost output of a loop was."""
    seen: dict[str, int] = {}
    changed = set()
    for item in got:
        item_id = item[key]
        seen[item_id] = seen.get(item_id, 0) + 1
        if item_id in expected and item != expected[item_id]:
            changed.add(item_id)
    missing = [i for i in expected if i not in seen]
    duplicates = sum(count - 1 for count in seen.values())
    loops: dict[str, str] = {}
    got_by_id = {item[key]: item for item in got}
    for item_id in [*missing, *sorted(changed)]:
        want = expected[item_id]
        loop = str(want.get("loop_id") or want.get("root_loop_id"))
        if loop in loops or len(loops) >= 10:
            continue
        have = got_by_id.get(item_id)
        differs = sorted(k for k in want if have is not None and want[k] != have.get(k))
        what = "changed " + ",".join(differs) if have else "missing"
        step = (steps or {}).get(str(want.get("trigger_event_id")))
        where = "" if step is None else f" at its event {step}"
        loops[loop] = f"{want.get('kind', key)} {what}{where}"
    return Comparison(len(expected), len(seen), len(missing), len(changed), duplicates, loops)


def cluster_settings(settings: Settings, data: str, overrides: dict[str, Any]) -> Settings:
    """``settings`` with the cluster's own data directory and memory store (hashing
    embedder), then ``overrides`` per group applied on top of those."""
    memory = settings.memory.model_copy(update={"uri": f"{data}/memory", "embedder": "hashing"})
    # the seed profile warns on most actions: the most outputs a fault could lose
    detection = settings.detection.model_copy(update={"profile": "seed"})
    updates: dict[str, Any] = {
        "data_dir": data,
        "memory": memory,
        "log_level": "info",
        "log_library_info": ("faust.tables.recovery",),  # recoveries' highwaters, for a post-mortem
        "detection": detection,
    }
    for group, values in overrides.items():
        current = updates.get(group, getattr(settings, group))
        updates[group] = current.model_copy(update=values) if isinstance(values, dict) else values
    return settings.model_copy(update=updates)


class Cluster:
    """A test broker (optionally behind a proxy), isolated settings, workers by pid."""

    def __init__(
        self,
        name: str,
        workdir: Path,
        *,
        partitions: int = 4,
        proxy: bool = False,
        broker: Any = None,
    ) -> None:
        self.workdir = workdir
        self.proxy: Any = None
        advertised = free_port() if proxy else None
        # the embedded broker, or one Apache Kafka node (LOOPWARDEN_TEST_BROKER=kafka),
        # unless a scenario brings its own (the three-node Apache Kafka cluster)
        self.broker = broker or new_test_broker(workdir / "broker.log", advertised_port=advertised)
        self.name = name
        self.partitions = partitions
        self.workers: list[subprocess.Popen[bytes]] = []
        self.settings = Settings()
        self._proxy_port = advertised

    def start(self, **overrides: Any) -> Cluster:
        """Start the broker (and proxy), build settings (``overrides`` per group), topics."""
        self.broker.start()
        bootstrap = self.broker.bootstrap_servers
        if self._proxy_port:
            from faultsuite.proxy import BrokerProxy

            self.proxy = BrokerProxy(self._proxy_port, self.broker.port).start()
            bootstrap = f"127.0.0.1:{self._proxy_port}"
        data = tempfile.mkdtemp(prefix="lw-fault-", dir=self.workdir)
        settings = Settings().namespaced(
            f"{self.name}-{uuid.uuid4().hex[:6]}",
            bootstrap_servers=bootstrap,
            partitions=self.partitions,
        )
        self.settings = cluster_settings(settings, data, overrides)
        if not isinstance(self.broker, EmbeddedBroker):  # the compose workers' Kafka settings
            self.settings = kafka_worker_settings(self.settings)
        self._create_topics()
        return self

    def renamespace(self, tag: str) -> None:
        """Fresh topic names and app id for the next phase (the broker slows as topics grow)."""
        fresh = self.settings.namespaced(
            f"{tag}-{uuid.uuid4().hex[:6]}", partitions=self.partitions
        )
        self.settings = fresh
        self._create_topics()

    def _create_topics(self) -> None:
        with ThreadPoolExecutor(1) as pool:  # callers may be inside an event loop
            pool.submit(asyncio.run, ensure_topics(self.settings, CAPABILITIES)).result(60)

    def start_worker(self) -> subprocess.Popen[bytes]:
        """A ``loopwarden worker`` process with the cluster's settings."""
        log = self.workdir / f"worker-{len(self.workers)}.log"
        process = start_worker_process(self.settings, str(log))
        self.workers.append(process)
        return process

    def worker_logs(self) -> str:
        """Every worker's log, concatenated."""
        return "".join(
            p.read_text(errors="replace") for p in sorted(self.workdir.glob("worker-*.log"))
        )

    def stop(self) -> None:
        """Stop the workers, the proxy and the broker this cluster started (by pid).

        With ``LOOPWARDEN_FAULTS_LOGS`` set, the workers' and broker's logs are kept
        in that folder (under the cluster's name) for a post-mortem.
        """
        for process in self.workers:
            if process.poll() is None:
                stop_process(process, timeout_s=10)
        keep = os.environ.get("LOOPWARDEN_FAULTS_LOGS")
        if keep:
            target = Path(keep) / self.name
            target.mkdir(parents=True, exist_ok=True)
            for log in self.workdir.glob("*.log"):
                shutil.copy(log, target / log.name)
        if self.proxy is not None:
            self.proxy.stop()
        self.broker.stop()


@contextmanager
def cluster(name: str, **overrides: Any) -> Iterator[Cluster]:
    """A started :class:`Cluster` in a temporary directory, stopped afterwards."""
    proxy = bool(overrides.pop("proxy", False))
    partitions = int(overrides.pop("partitions", 4))
    make_broker = overrides.pop("broker", None)  # workdir -> an unstarted broker
    with tempfile.TemporaryDirectory(prefix=f"lw-{name}-") as workdir:
        folder = Path(workdir)
        broker = make_broker(folder) if make_broker else None
        running = Cluster(name, folder, partitions=partitions, proxy=proxy, broker=broker)
        try:
            yield running.start(**overrides)
        finally:
            running.stop()


async def end_offsets(bootstrap: str, topics: list[str]) -> dict[TopicPartition, int]:
    """True end offsets of every partition of ``topics``."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
    await consumer.start()
    try:
        partitions = [
            TopicPartition(topic, p)
            for topic in topics
            for p in sorted(
                consumer.partitions_for_topic(topic) or await _partitions(consumer, topic)
            )
        ]
        reported = await consumer.end_offsets(partitions)
    finally:
        await consumer.stop()
    return await probe_end_offsets(bootstrap, reported)


async def _partitions(consumer: AIOKafkaConsumer, topic: str) -> set[int]:
    await consumer._client.force_metadata_update()
    return consumer.partitions_for_topic(topic) or set()


async def wait_committed(settings: Settings, topics: list[str], timeout_s: float) -> dict[str, int]:
    """Wait until the workers' group committed to the end of ``topics``.

    Returns the records still uncommitted per topic (all zero when caught up).
    """
    bootstrap = settings.kafka.bootstrap_servers
    reader = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=settings.app_id, enable_auto_commit=False
    )
    await reader.start()
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            ends = await end_offsets(bootstrap, topics)
            behind = {topic: 0 for topic in topics}
            for tp, end in ends.items():
                committed = await reader.committed(tp) or 0
                behind[tp.topic] += max(0, end - committed)
            if not any(behind.values()) or time.monotonic() > deadline:
                return behind
            await asyncio.sleep(0.5)
    finally:
        await reader.stop()


async def read_records(bootstrap: str, topic: str) -> list[Any]:
    """Every record of ``topic`` now (aiokafka ``ConsumerRecord``s, partition by partition)."""
    ends = {tp: end for tp, end in (await end_offsets(bootstrap, [topic])).items() if end}
    records: list[Any] = []
    if not ends:
        return records
    # earliest: the seek to the beginning below races a 'latest' reset otherwise
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, fetch_max_wait_ms=10, auto_offset_reset="earliest"
    )
    await consumer.start()
    try:
        consumer.assign(list(ends))
        await consumer.seek_to_beginning(*ends)
        waiting = dict(ends)
        while waiting:
            batches = await consumer.getmany(*waiting, timeout_ms=1000, max_records=20_000)
            for batch in batches.values():
                records.extend(batch)
            for tp in list(waiting):
                if await consumer.position(tp) >= waiting[tp]:
                    del waiting[tp]
    finally:
        await consumer.stop()
    return records


async def read_topic(bootstrap: str, topic: str) -> list[tuple[bytes | None, bytes | None, list]]:
    """Every record of ``topic`` now: (key, value, headers)."""
    return [(r.key, r.value, list(r.headers or ())) for r in await read_records(bootstrap, topic)]


async def read_json(bootstrap: str, topic: str) -> list[dict[str, Any]]:
    """The JSON values of ``topic`` (tombstones skipped)."""
    return [codec.loads(value) for _, value, _ in await read_topic(bootstrap, topic) if value]


async def wait_ready(settings: Settings, timeout_s: float = 120.0) -> float:
    """Wait until a worker answers (a failed action's warning comes back); returns seconds."""
    from loopwarden.streams.client.publisher import AsyncPublisher
    from loopwarden.streams.client.subscriber import WarningSubscriber

    began = time.monotonic()
    loop_id = f"ready-{uuid.uuid4().hex[:8]}"
    async with WarningSubscriber(settings, loop_id=loop_id) as warnings:
        async with AsyncPublisher(settings) as publisher:
            await publisher.publish(loop_id, "ping", success=False, error_message="ready?")
        if not await warnings.collect(1, timeout_s):
            raise TimeoutError(f"no worker answered within {timeout_s:.0f} s")
    return time.monotonic() - began
