"""Batched output for the worker: records grouped per topic-partition, sent as batches.

Faust spends its per-message cost on every record it produces (changelog writes
included): about as much as the whole detection logic. The worker therefore
hands everything it produces — warnings, reflection requests, dead letters and
its table's changelog — to a :class:`RecordSink`, which groups the records per
topic-partition and sends each group with aiokafka's batch API on the worker's
own producer, shortly after (``linger_s``) or when the buffer is large.

Delivery stays at-least-once: Faust flushes its producer before it commits
offsets, and the worker's producer flushes the sink first (see
:mod:`loopwarden.streams.app`), so no offset is committed before the outputs of
the records below it are acknowledged. Records of one topic-partition are sent
in the order they were added.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from aiokafka import AIOKafkaProducer

from loopwarden.errors import PublishError
from loopwarden.streams.publisher import default_partition

log = logging.getLogger(__name__)

Header = tuple[str, bytes]


@dataclass(slots=True)
class _Pending:
    key: bytes | None
    value: bytes | None
    headers: Sequence[Header]
    partition: int | None


class RecordSink:
    """Buffers records and sends them per topic-partition as producer batches."""

    def __init__(
        self,
        producer: Callable[[], AIOKafkaProducer],
        *,
        linger_s: float = 0.002,
        max_buffer_bytes: int = 8 * 1024 * 1024,
    ) -> None:
        self._producer = producer
        self.linger_s = linger_s
        self.max_buffer_bytes = max_buffer_bytes
        self._buffers: dict[str, list[_Pending]] = {}
        self._bytes = 0
        self._lock = asyncio.Lock()
        self._timer: asyncio.TimerHandle | None = None
        self._background: set[asyncio.Task[None]] = set()
        self._partition_counts: dict[str, int] = {}
        self._partition_of: dict[tuple[str, bytes], int] = {}
        self.sent = 0

    @property
    def buffered_bytes(self) -> int:
        """Bytes added and not yet handed to the producer."""
        return self._bytes

    @property
    def full(self) -> bool:
        """True when the caller should ``await flush()`` before adding more."""
        return self._bytes >= self.max_buffer_bytes

    def add(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        *,
        partition: int | None = None,
        headers: Sequence[Header] = (),
    ) -> None:
        """Queue one record; ``partition=None`` partitions by key like Kafka's default."""
        self._buffers.setdefault(topic, []).append(_Pending(key, value, headers, partition))
        self._bytes += len(value or b"") + len(key or b"") + 16
        if self._timer is None:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(self.linger_s, self._flush_in_background)

    async def flush(self) -> None:
        """Send everything added so far and wait until the broker acknowledged it."""
        async with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            buffers, self._buffers, self._bytes = self._buffers, {}, 0
            if not buffers:
                return
            producer = self._producer()
            deliveries = []
            for topic, records in buffers.items():
                for partition, group in (
                    await self._by_partition(producer, topic, records)
                ).items():
                    deliveries.extend(await self._send(producer, topic, partition, group))
            results = await asyncio.gather(*deliveries, return_exceptions=True)
            errors = [r for r in results if isinstance(r, BaseException)]
            if errors:
                raise PublishError(f"{len(errors)} output batch(es) not delivered: {errors[0]}")

    def _flush_in_background(self) -> None:
        self._timer = None
        task = asyncio.ensure_future(self._flush_logged())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _flush_logged(self) -> None:
        try:
            await self.flush()
        except Exception:  # the commit-time flush raises again; here we only log
            log.exception("sending output batches failed")

    async def _by_partition(
        self, producer: AIOKafkaProducer, topic: str, records: list[_Pending]
    ) -> dict[int, list[_Pending]]:
        groups: dict[int, list[_Pending]] = {}
        count = self._partition_counts.get(topic)
        for record in records:
            partition = record.partition
            if partition is None:
                if count is None:
                    count = len(await producer.partitions_for(topic))
                    self._partition_counts[topic] = count
                partition = self._partition(topic, record.key, count)
            groups.setdefault(partition, []).append(record)
        return groups

    def _partition(self, topic: str, key: bytes | None, count: int) -> int:
        if key is None:
            return 0
        cached = self._partition_of.get((topic, key))
        if cached is None:
            if len(self._partition_of) > 200_000:
                self._partition_of.clear()
            cached = self._partition_of[(topic, key)] = default_partition(key, count)
        return cached

    async def _send(
        self, producer: AIOKafkaProducer, topic: str, partition: int, records: list[_Pending]
    ) -> list[asyncio.Future[object]]:
        deliveries = []
        batch = producer.create_batch()
        for record in records:
            if (
                batch.append(
                    key=record.key, value=record.value, timestamp=None, headers=list(record.headers)
                )
                is None
            ):
                deliveries.append(await producer.send_batch(batch, topic, partition=partition))
                batch = producer.create_batch()
                if (
                    batch.append(
                        key=record.key,
                        value=record.value,
                        timestamp=None,
                        headers=list(record.headers),
                    )
                    is None
                ):
                    raise PublishError(f"a record for {topic} is larger than a producer batch")
        if batch.record_count():
            deliveries.append(await producer.send_batch(batch, topic, partition=partition))
        self.sent += len(records)
        return deliveries
