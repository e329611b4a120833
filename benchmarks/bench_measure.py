"""Measuring an engine: warnings counted and timed as they arrive, events published
single or batched at a pace, a process's CPU time."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer, TopicPartition
from workloads import Prepared

from loopwarden.agents.capabilities import CAPABILITIES

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from test_brokers import BROKER_KINDS, kafka_worker_settings, new_test_broker

from loopwarden.settings import Settings
from loopwarden.streams.client.publisher import AsyncPublisher
from loopwarden.streams.tools.broker import EmbeddedBroker

RESULTS = Path(__file__).parent / "results"
"""Where every benchmark writes its JSON."""
LOGS = RESULTS / "logs"
"""The broker's and the engines' logs."""


@contextmanager
def embedded_broker() -> Iterator[EmbeddedBroker]:
    """The embedded broker of one benchmark run, logging to :data:`LOGS`."""
    with bench_broker("embedded") as broker:
        yield broker  # type: ignore[misc]


@contextmanager
def bench_broker(kind: str) -> Iterator[Any]:
    """The broker of one benchmark run, logging to :data:`LOGS`: the embedded one or one
    Apache Kafka node (``tests/support/apache_kafka.py``, the version of
    ``infra/kafka/pom.xml``; Java and Maven)."""
    if kind not in BROKER_KINDS:
        raise SystemExit(f"--brokers: {kind!r} is none of {', '.join(BROKER_KINDS)}")
    LOGS.mkdir(parents=True, exist_ok=True)
    with new_test_broker(LOGS / f"broker-{kind}.log", kind=kind) as broker:
        described = getattr(broker, "describe", None)
        print(described() if described else f"broker on {broker.bootstrap_servers}", flush=True)
        yield broker


__all__ = ["bench_broker", "embedded_broker", "kafka_worker_settings", "write_results"]


@contextmanager
def patterns_worker(tag: str) -> Iterator[Settings]:
    """An embedded broker and one worker running the ``patterns`` profile (the 4th
    identical call is the first finding, the 10th the stop), in a temporary folder:
    the worker's settings, both stopped after."""
    from loopwarden.cli.runtime import start_worker_process, stop_process
    from loopwarden.streams.tools.topics import ensure_topics

    with tempfile.TemporaryDirectory() as home, EmbeddedBroker() as broker:
        settings = Settings().namespaced(tag, bootstrap_servers=broker.bootstrap_servers)
        detection = settings.detection.model_copy(update={"profile": "patterns"})
        memory = settings.memory.model_copy(update={"uri": f"{home}/memory"})
        settings = settings.model_copy(
            update={"detection": detection, "memory": memory, "data_dir": f"{home}/data"}
        )
        asyncio.run(ensure_topics(settings, CAPABILITIES))
        worker = start_worker_process(settings, f"{home}/worker.log")
        try:
            yield settings
        finally:
            stop_process(worker)


def write_results(name: str, payload: object) -> Path:
    """``payload`` as ``results/<name>-<time>.json``; prints and returns the path."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(payload, indent=2))
    print(f"\nwrote {out}")
    return out


OTHER_ORIGINS = frozenset({"fleet", "guardrails"})
"""Roles whose warnings share the warnings topic with the monitor's (``produced_by``)."""


class Collector:
    """Counts the monitor's warnings on the warnings topic and records their latency:
    received − the triggering event's send time (``sent``, by event id). Warnings of
    the other roles (:data:`OTHER_ORIGINS`) are counted apart, in ``by_origin``."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.latencies_ms: list[float] = []
        self.count = 0
        self.last_at = 0.0
        self._consumer: AIOKafkaConsumer | None = None
        self._task: asyncio.Task[None] | None = None
        self.prefix = ""
        self.sent: dict[str, float] = {}
        self.by_origin: Counter[str] = Counter()
        """Every warning received, by the component that produced it."""

    async def start(self) -> None:
        self._consumer = AIOKafkaConsumer(
            bootstrap_servers=self.settings.kafka.bootstrap_servers,
            enable_auto_commit=False,
            fetch_max_wait_ms=5,
            auto_offset_reset="earliest",
        )
        await self._consumer.start()
        tps = [
            TopicPartition(self.settings.topics.warnings, p)
            for p in range(self.settings.topics.partitions)
        ]
        self._consumer.assign(tps)
        await self._consumer.seek_to_beginning(*tps)
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        assert self._consumer is not None
        while True:
            batches = await self._consumer.getmany(timeout_ms=100, max_records=10000)
            now = time.time()
            for records in batches.values():
                for record in records:
                    if self.prefix and not record.key.startswith(self.prefix.encode()):
                        continue
                    warning = orjson.loads(record.value)
                    if warning["kind"] == "logic_spin":  # the analyst's (loopwarden-all)
                        continue
                    origin = (warning.get("produced_by") or {}).get("component") or "engine"
                    self.by_origin[origin] += 1
                    if origin in OTHER_ORIGINS:
                        continue
                    self.count += 1
                    self.last_at = now
                    sent = self.sent.get(warning.get("trigger_event_id", ""))
                    if sent is not None:
                        self.latencies_ms.append((now - sent) * 1000.0)

    def reset(self, prefix: str) -> dict[str, float]:
        """Count warnings of loops starting with ``prefix`` from now on; returns the
        send-time map to fill while publishing."""
        self.prefix, self.count, self.last_at, self.latencies_ms = prefix, 0, 0.0, []
        self.sent, self.by_origin = {}, Counter()
        return self.sent

    async def wait_for(self, count: int, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while self.count < count and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        return self.count >= count

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
        if self._consumer:
            await self._consumer.stop()


async def wait_caught_up(settings: Settings, topics: list[str], timeout_s: float) -> int:
    """Wait until the worker's consumer group has committed to the end of ``topics``
    (it has processed everything published); returns the records still behind."""
    from loopwarden.streams.client.offsets import probe_end_offsets

    bootstrap = settings.kafka.bootstrap_servers
    reader = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=settings.app_id, enable_auto_commit=False
    )
    await reader.start()
    try:
        partitions = [
            TopicPartition(topic, p) for topic in topics for p in range(settings.topics.partitions)
        ]
        deadline = time.monotonic() + timeout_s
        while True:
            ends = await probe_end_offsets(bootstrap, await reader.end_offsets(partitions))
            behind = 0
            for tp, end in ends.items():
                behind += max(0, end - (await reader.committed(tp) or 0))
            if not behind or time.monotonic() > deadline:
                return behind
            await asyncio.sleep(0.5)
    finally:
        await reader.stop()


def process_cpu_s(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def publish(
    settings: Settings,
    events: list[Prepared],
    rate: float | None,
    shape: str,
    sent: dict[str, float] | None = None,
) -> float:
    """Publish the encoded ``events``; return the wall time of the first publish and
    note each event's send time in ``sent``.

    ``batched``: through ``AsyncPublisher`` (up to 50 events of one partition per
    record). ``single``: one event per record through librdkafka (confluent-kafka),
    as a Java, Go or kcat producer would send them.
    """
    sent = {} if sent is None else sent
    start = time.time()
    if shape == "single":
        from confluent_kafka import Producer

        producer = Producer(
            {
                "bootstrap.servers": settings.kafka.bootstrap_servers,
                "linger.ms": 1 if rate else 5,
                "partitioner": "murmur2_random",  # Kafka's default (Java) partitioner
                "queue.buffering.max.messages": 1_000_000,
            }
        )
        topic = settings.topics.actions
        async for item in _paced(events, rate, start, sent):
            producer.produce(topic, item.data, key=item.loop_id.encode())
            producer.poll(0)
        await asyncio.to_thread(producer.flush, 60)
        return start
    async with AsyncPublisher(settings) as publisher:
        async for item in _paced(events, rate, start, sent):
            publisher.enqueue(item.loop_id, item.event_id, item.data)
        await publisher.flush()
    return start


async def _paced(
    events: list[Prepared], rate: float | None, start: float, sent: dict[str, float]
) -> AsyncIterator[Prepared]:
    """``events`` at ``rate`` per second (or at once, yielding to the event loop every
    5,000 so that batches go out), each one's send time noted in ``sent``."""
    interval = 1.0 / rate if rate else 0.0
    for i, item in enumerate(events):
        now = time.time()
        if rate:
            target = start + i * interval
            if target > now:
                await asyncio.sleep(target - now)
                now = time.time()
        elif i % 5000 == 4999:
            await asyncio.sleep(0)
        sent[item.event_id] = now
        yield item
