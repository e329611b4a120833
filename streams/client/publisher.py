"""Publishing action events from asyncio code (``sync_publisher`` wraps it for plain loops).

Events are validated when they are built (a bad field raises
:class:`~loopwarden.errors.EventValidationError` in the caller, with the field
path), encoded once with orjson and keyed by loop id.

With batching on (the default) the publisher computes each loop's partition
with Kafka's default partitioner (murmur2 of the loop id, as every Java client
and aiokafka do), collects the events that share a partition for at most
``publisher.linger_ms`` or ``publisher.batch_max_events`` events, and sends them
as one record holding a JSON array. A worker pays its per-record cost once per
batch instead of once per event, and each loop's state stays on the partition
its key maps to. With ``batching=False`` every event is its own record, as any
other Kafka producer would send it; the worker reads both.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError
from opentelemetry.trace import TracerProvider

from loopwarden.errors import PublishError
from loopwarden.schemas.events import (
    ActionEvent,
    validate_action,
)
from loopwarden.schemas.positions import default_partition
from loopwarden.settings import Settings
from loopwarden.streams.client.event_builder import (
    completion_record,
    encode_event,
    make_action_event,
    override_record,
)
from loopwarden.streams.client.memory_writes import (
    MemoryEncoding,
    arrow_available,
    encode_memory_write,
    make_memory_write,
    memory_record_headers,
    memory_write_record,
    memory_write_records,
)
from loopwarden.streams.client.producer import start_producer
from loopwarden.streams.client.propagation import headers_of
from loopwarden.streams.client.publishing import PublishSpans

__all__ = [
    "AsyncPublisher",
    "default_partition",
    "encode_event",
    "encode_memory_write",
    "make_action_event",
    "make_memory_write",
]

log = logging.getLogger(__name__)
_Item = tuple[str, str, bytes, dict[str, str] | None]
"""(loop id, event id, encoded event, trace context)"""


class AsyncPublisher:
    """Publishes action events from asyncio code.

    >>> async with AsyncPublisher(settings) as publisher:
    ...     await publisher.publish("loop-1", "shell", params={"cmd": "ls"})
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        bootstrap_servers: str | None = None,
        topic: str | None = None,
        batching: bool = True,
        tracer_provider: TracerProvider | None = None,
    ) -> None:
        self.settings = settings or Settings()
        self.bootstrap_servers = bootstrap_servers or self.settings.kafka.bootstrap_servers
        self.topic = topic or self.settings.topics.actions
        self.batching = batching
        self.spans = PublishSpans(self.topic, tracer_provider)
        self._linger_s = self.settings.publisher.linger_ms / 1000.0
        self._batch_max = self.settings.publisher.batch_max_events
        self._producer: AIOKafkaProducer | None = None
        self._partition_count = 0
        self._partitions_of: dict[str, list[int]] = {}
        self._memory_key = self.settings.publisher.memory_key
        self._buffers: dict[int, list[_Item]] = {}
        self._timers: dict[int, asyncio.TimerHandle] = {}
        self._inflight: set[asyncio.Future[Any]] = set()
        self._partition_locks: dict[int, asyncio.Lock] = {}
        self._failed: list[str] = []
        self._errors: list[BaseException] = []
        self.published = 0

    async def start(self) -> None:
        """Connect and read the topic's partition count.

        The topic must exist (a worker or ``loopwarden topics`` creates it); it is
        looked up without asking the broker to auto-create it, since an
        auto-created topic would get the broker's default partition count.
        """
        self._producer = await start_producer(
            self.bootstrap_servers, self.settings.publisher, self.settings.kafka.security
        )
        try:
            cluster = await self._producer.client.fetch_all_metadata()
            partitions = cluster.partitions_for_topic(self.topic)
            if not partitions:
                raise PublishError(
                    f"topic {self.topic!r} does not exist on {self.bootstrap_servers}; start a "
                    "worker or run `loopwarden topics` to create loopwarden's topics"
                )
        except BaseException:
            await self._producer.stop()
            self._producer = None
            raise
        self._partition_count = len(partitions)

    async def stop(self) -> None:
        """Flush what is buffered, then disconnect."""
        try:
            await self.flush()
        finally:
            if self._producer is not None:
                await self._producer.stop()
                self._producer = None

    async def __aenter__(self) -> AsyncPublisher:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    async def publish(self, loop_id: str, action_type: str, **fields: Any) -> str:
        """Build, validate and enqueue one action event; return its event id.

        Delivery happens in the background; :meth:`flush` waits for it and
        raises :class:`PublishError` if anything was not delivered.
        """
        return self.publish_event(make_action_event(loop_id, action_type, **fields))

    def publish_event(self, event: ActionEvent | Mapping[str, Any]) -> str:
        """Enqueue an already built event (or a dict that is validated first); it carries
        the trace context of the caller's span (see
        :mod:`~loopwarden.streams.client.propagation`)."""
        if not isinstance(event, ActionEvent):
            event = validate_action(dict(event))
        event = self.spans.stamp(event)
        # a delegated loop's events are keyed by its family's root: the family travels on
        # one partition in the order it was published (the fleet role reads it there;
        # the monitor re-routes each event to its own loop's partition)
        key = event.payload.root(event.loop_id)
        self.enqueue(key, event.event_id, encode_event(event), event.trace_context)
        return event.event_id

    def enqueue(
        self,
        loop_id: str,
        event_id: str,
        data: bytes,
        trace_context: dict[str, str] | None = None,
    ) -> None:
        """Enqueue pre-encoded event bytes (must run on the publisher's event loop), keyed
        by ``loop_id`` (a delegated loop's: its family's root loop id);
        ``trace_context`` becomes the record's headers if the record holds this event alone."""
        if self._producer is None:
            raise PublishError("publisher is not started")
        self.published += 1
        partition = self._partition(loop_id)
        item = (loop_id, event_id, data, trace_context)
        if not self.batching:
            self._track(self._send([item], partition, loop_id.encode()))
            return
        buffer = self._buffers.setdefault(partition, [])
        buffer.append(item)
        if len(buffer) >= self._batch_max:
            self._flush_partition(partition)
        elif partition not in self._timers:
            loop = asyncio.get_running_loop()
            self._timers[partition] = loop.call_later(
                self._linger_s, self._flush_partition, partition
            )

    async def send_raw(self, value: bytes, key: bytes | None = None) -> tuple[int, int]:
        """Send bytes as they are (no validation); return (partition, offset) once acked.

        For relaying JSON produced elsewhere; the worker validates it and
        dead-letters what breaks the contract.
        """
        if self._producer is None:
            raise PublishError("publisher is not started")
        try:
            metadata = await self._producer.send_and_wait(self.topic, value=value, key=key)
            return metadata.partition, metadata.offset
        except (KafkaError, OSError) as exc:
            raise PublishError(f"sending a raw record failed: {exc}") from exc

    async def complete_loop(
        self, loop_id: str, alignment_score: float, drift_score: float, **fields: Any
    ) -> str:
        """Publish a loop completion (reflection done) and wait for the broker's ack.

        ``fields`` as in :class:`~loopwarden.schemas.completions.CompletionPayload`
        (``bias_tags``, personas, ``override_*``, ``max_reruns``). The record is
        keyed by the loop's family, so the family's guardrail state stays together.
        """
        record = completion_record(loop_id, alignment_score, drift_score, **fields)
        return await self._send_guardrail_event("loop_complete", loop_id, record)

    async def override_guardrails(self, loop_id: str, override_by: str, **fields: Any) -> str:
        """Publish a guardrail override for ``loop_id``'s family (``override_fatigue``,
        ``override_max_reruns``, ``override_reason``)."""
        record = override_record(loop_id, override_by, **fields)
        return await self._send_guardrail_event("guardrail_override", loop_id, record)

    async def remember(self, content: str, *, event_id: str | None = None, **fields: Any) -> str:
        """Publish a memory write (``fields`` as in
        :class:`~loopwarden.schemas.memory.MemoryPayload`) and wait for the broker's ack;
        keyed by its memory id or its scope (``publisher.memory_key``)."""
        written, key, value = memory_write_record(
            content, self._memory_key, event_id=event_id, **fields
        )
        if self._producer is None:
            raise PublishError("publisher is not started")
        try:
            await self._producer.send_and_wait(
                self.settings.topics.memory_writes, value=value, key=key
            )
        except (KafkaError, OSError) as exc:
            raise PublishError(f"publishing a memory write failed: {exc}") from exc
        return written

    async def remember_many(
        self,
        memories: Iterable[Mapping[str, Any]],
        *,
        encoding: MemoryEncoding | None = None,
        per_record: int | None = None,
        max_record_bytes: int = 512 * 1024,
    ) -> list[str]:
        """Publish many memory writes and wait for the broker's acks; return their ids.

        Each item holds ``content`` and :class:`~loopwarden.schemas.memory.MemoryPayload`
        fields (``embedding`` as numbers, a numpy array or base64 float32), optionally
        ``event_id`` and ``occurred_at``; every item is validated (and redacted) before
        anything is sent, so a bad item sends nothing. Event ids come back in the order
        given. Each write goes to the partition its key maps to (``publisher.memory_key``:
        memory id or scope, murmur2 as Kafka's default partitioner), and the writes of a
        partition and scope travel together (record key: the scope), at most
        ``per_record`` writes (default 2,000 as Arrow, 200 as JSON) or about
        ``max_record_bytes`` per record.

        ``encoding="arrow"`` (the default when numpy and pyarrow are installed:
        ``loopwarden[bulk]`` or the worker) sends Arrow IPC records, checked column by
        column, vectors as float32 columns; ``"json"`` (the default without them) sends
        JSON arrays, vectors as base64 float32. A worker reads both; with
        ``memory.write_checks=deferred`` it stores them at append speed. Raises
        :class:`PublishError` naming how many were not delivered.
        """
        if self._producer is None:
            raise PublishError("publisher is not started")
        topic = self.settings.topics.memory_writes
        partitions = await self.topic_partitions(topic)
        if encoding is None:
            encoding = "arrow" if arrow_available() else "json"
        records, event_ids = memory_write_records(
            list(memories), encoding, partitions, self._memory_key, per_record, max_record_bytes
        )
        headers = memory_record_headers(encoding) or None
        deliveries: list[tuple[list[str], asyncio.Future[Any]]] = []
        try:
            for record in records:
                delivery = await self._producer.send(
                    topic,
                    value=record.value,
                    key=record.key,
                    partition=record.partition,
                    headers=headers,
                )
                deliveries.append((record.event_ids, delivery))
        except (KafkaError, OSError) as exc:
            raise PublishError(f"publishing memory writes failed: {exc}") from exc
        results = await asyncio.gather(*(d for _, d in deliveries), return_exceptions=True)
        failed = [
            event_id
            for (ids, _), result in zip(deliveries, results, strict=True)
            if isinstance(result, BaseException)
            for event_id in ids
        ]
        if failed:
            first = next(r for r in results if isinstance(r, BaseException))
            raise PublishError(
                f"{len(failed)} memory write(s) not delivered: {first}", tuple(failed)
            )
        return event_ids

    async def topic_partitions(self, topic: str) -> list[int]:
        """The partitions of ``topic`` (which must exist), sorted."""
        assert self._producer is not None
        if topic not in self._partitions_of:
            cluster = await self._producer.client.fetch_all_metadata()
            found = cluster.partitions_for_topic(topic)
            if not found:
                raise PublishError(
                    f"topic {topic!r} does not exist on {self.bootstrap_servers}; start a "
                    "worker or run `loopwarden topics` to create loopwarden's topics"
                )
            self._partitions_of[topic] = sorted(found)
        return self._partitions_of[topic]

    async def _send_guardrail_event(
        self, kind: str, loop_id: str, record: tuple[str, bytes, bytes]
    ) -> str:
        if self._producer is None:
            raise PublishError("publisher is not started")
        event_id, key, value = record
        try:
            await self._producer.send_and_wait(
                self.settings.topics.loop_completions, value=value, key=key
            )
        except (KafkaError, OSError) as exc:
            raise PublishError(f"publishing {kind} for {loop_id} failed: {exc}") from exc
        return event_id

    async def flush(self) -> None:
        """Send everything buffered and wait for the broker to acknowledge it."""
        for partition in list(self._buffers):
            self._flush_partition(partition)
        while self._inflight:
            await asyncio.gather(*list(self._inflight), return_exceptions=True)
        if self._failed:
            failed, self._failed = tuple(self._failed), []
            errors, self._errors = self._errors, []
            raise PublishError(
                f"{len(failed)} event(s) not delivered: {errors[0] if errors else 'unknown'}",
                failed,
            )

    # -- internals --------------------------------------------------------------------------

    def _partition(self, loop_id: str) -> int:
        return default_partition(loop_id.encode(), self._partition_count)

    def _flush_partition(self, partition: int) -> None:
        timer = self._timers.pop(partition, None)
        if timer is not None:
            timer.cancel()
        items = self._buffers.pop(partition, None)
        if not items:
            return
        loop_ids = {item[0] for item in items}
        key = next(iter(loop_ids)).encode() if len(loop_ids) == 1 else None
        self._track(self._send(items, partition, key))

    def _track(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._inflight.add(task)
        task.add_done_callback(self._inflight.discard)

    async def _send(self, items: list[_Item], partition: int, key: bytes | None) -> None:
        assert self._producer is not None
        value = items[0][2] if len(items) == 1 else b"[" + b",".join(i[2] for i in items) + b"]"
        headers = headers_of(items[0][3]) if len(items) == 1 else []
        lock = self._partition_locks.setdefault(partition, asyncio.Lock())
        try:
            # aiokafka's send() may wait for a full batch to drain, and waiters do not
            # resume in order; the FIFO lock keeps each partition's records in order.
            async with lock:
                delivery = await self._producer.send(
                    self.topic, value=value, key=key, partition=partition, headers=headers
                )
            await delivery
        except (KafkaError, OSError) as exc:
            log.error("publishing %d event(s) failed: %s", len(items), exc)
            self._failed.extend(item[1] for item in items)
            self._errors.append(exc)
