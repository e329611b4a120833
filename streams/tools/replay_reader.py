"""Reading recorded topics for an audit: whole partitions, up to their true end, outside
any consumer group.

The reader never joins a group (the workers' committed offsets are left alone)
and never follows a topic: it reads each assigned partition from a start offset
to the end offset it found when it started, so a replay has a fixed input even
while workers keep writing. End offsets are probed (:mod:`loopwarden.streams.client.offsets`)
because the embedded broker under-reports them. Time ranges are resolved by the
caller from the records' timestamps: the embedded broker answers
ListOffsets-by-time with offset 0 for every time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from types import TracebackType

from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition
from aiokafka.errors import KafkaError

from loopwarden.errors import LoopwardenError
from loopwarden.settings.kafka_security import KafkaSecurity
from loopwarden.streams.client.connect import start_client, topic_partitions
from loopwarden.streams.client.offsets import probe_end_offsets
from loopwarden.streams.client.security import client_options


@dataclass(frozen=True, slots=True)
class PartitionSpan:
    """Offsets ``[start, end)`` of one partition to read."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        """How many offsets the span covers."""
        return max(self.end - self.start, 0)


class TopicRangeReader:
    """An unsubscribed consumer that reads :class:`PartitionSpan` s to their end."""

    def __init__(
        self,
        bootstrap_servers: str,
        fetch_max_wait_ms: int = 100,
        security: KafkaSecurity | None = None,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.security = security or KafkaSecurity()
        self._consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap_servers,
            group_id=None,
            enable_auto_commit=False,
            fetch_max_wait_ms=fetch_max_wait_ms,
            max_partition_fetch_bytes=4 * 1024 * 1024,
            auto_offset_reset="earliest",
            **client_options(self.security),
        )

    async def __aenter__(self) -> TopicRangeReader:
        await start_client(self._consumer, self.bootstrap_servers)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._consumer.stop()

    async def partitions(self, topic: str) -> list[int]:
        """The partitions of ``topic``; an error naming it when it does not exist."""
        found = await topic_partitions(self._consumer, topic)
        if not found:
            raise LoopwardenError(f"topic {topic!r} does not exist on {self.bootstrap_servers}")
        return sorted(found)

    async def bounds(self, topic: str, partitions: Iterable[int]) -> dict[int, tuple[int, int]]:
        """``{partition: (first offset, true end offset)}`` right now."""
        tps = [TopicPartition(topic, p) for p in partitions]
        first = await self._consumer.beginning_offsets(tps)
        reported = await self._consumer.end_offsets(tps)
        ends = await probe_end_offsets(self.bootstrap_servers, reported, security=self.security)
        return {tp.partition: (first[tp], max(ends[tp], first[tp])) for tp in tps}

    async def whole(self, topic: str) -> list[PartitionSpan]:
        """Every partition of ``topic``, from its first offset to its true end now."""
        bounds = await self.bounds(topic, await self.partitions(topic))
        return [PartitionSpan(topic, p, first, end) for p, (first, end) in bounds.items()]

    async def read(self, spans: Iterable[PartitionSpan]) -> AsyncIterator[list[ConsumerRecord]]:
        """Batches of records of every span, each partition in offset order."""
        pending = {TopicPartition(s.topic, s.partition): s for s in spans if s.size}
        if not pending:
            return
        consumer = self._consumer
        consumer.assign(list(pending))
        for tp, span in pending.items():
            consumer.seek(tp, span.start)
        try:
            while pending:
                batches = await consumer.getmany(*pending, timeout_ms=500, max_records=10_000)
                for tp, records in batches.items():
                    wanted = pending.get(tp)
                    if wanted is None:
                        continue
                    inside = [r for r in records if r.offset < wanted.end]
                    if inside:
                        yield inside
                for tp in list(pending):
                    if await consumer.position(tp) >= pending[tp].end:
                        del pending[tp]
                        consumer.pause(tp)
        finally:
            consumer.assign([])


async def committed_offsets(
    bootstrap_servers: str,
    group_id: str,
    topics: Iterable[str],
    security: KafkaSecurity | None = None,
) -> dict[tuple[str, int], int] | None:
    """The workers' committed offsets of ``topics`` (None when the broker cannot say).

    Asked through a consumer that carries the group id but never subscribes, so it
    does not join the group (aiokafka's admin OffsetFetch fails to decode Tansu's answer).
    """
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap_servers,
        group_id=group_id,
        enable_auto_commit=False,
        **client_options(security or KafkaSecurity()),
    )
    await start_client(consumer, bootstrap_servers)
    found: dict[tuple[str, int], int] = {}
    try:
        for topic in topics:
            for partition in sorted(await topic_partitions(consumer, topic)):
                offset = await consumer.committed(TopicPartition(topic, partition))
                if offset is not None and offset >= 0:
                    found[(topic, partition)] = offset
    except KafkaError:
        return None
    finally:
        await consumer.stop()
    return found


async def wait_until_committed(
    bootstrap_servers: str,
    group_id: str,
    topics: Iterable[str],
    timeout_s: float = 90.0,
    poll_s: float = 0.1,
) -> None:
    """Wait until ``group_id`` has committed the end (as it is now) of every partition of
    ``topics``; :class:`TimeoutError` after ``timeout_s``. Tests and benchmarks use it to
    know the workers processed what was published."""
    names = list(topics)
    ends: dict[tuple[str, int], int] = {}
    async with TopicRangeReader(bootstrap_servers) as reader:
        for topic in names:
            bounds = await reader.bounds(topic, await reader.partitions(topic))
            ends.update({(topic, p): end for p, (_, end) in bounds.items() if end})
    deadline = time.monotonic() + timeout_s
    while True:
        committed = await committed_offsets(bootstrap_servers, group_id, names) or {}
        if all(committed.get(tp, 0) >= end for tp, end in ends.items()):
            return
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{group_id} did not commit {ends} within {timeout_s:g} s")
        await asyncio.sleep(poll_s)
