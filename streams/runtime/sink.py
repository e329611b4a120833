"""Batched output for the worker: records grouped per topic-partition, sent as batches.

Faust spends its per-message cost on every record it produces (changelog writes
included): about as much as the whole detection logic. The worker therefore
hands everything it produces — warnings, reflection requests, dead letters and
its table's changelog — to a :class:`RecordSink`, which groups the records per
topic-partition and sends each group with aiokafka's batch API on the worker's
own producer, shortly after (``linger_s``) or when the buffer is large.

Delivery stays at-least-once: Faust flushes its producer before it commits
offsets, and the worker's producer flushes the sink first (see
:mod:`loopwarden.streams.runtime.app`), so no offset is committed before the outputs of
the records below it are acknowledged. Records of one topic-partition are sent
in the order they were added. A table's changelog is sent only after the other
records of the same flush are acknowledged (:meth:`RecordSink.deliver_last`), so
a restored state never includes an event whose outputs were lost.

A delivery that fails (also in a background flush nobody awaits) is latched, as
Quix Streams' producer does: its records are kept, ahead of newer ones, and the
next :meth:`flush` sends them again and raises :class:`PublishError` until they
are delivered. A commit therefore never passes an undelivered output.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from aiokafka import AIOKafkaProducer
from aiokafka.producer.message_accumulator import BatchBuilder

from loopwarden.errors import PublishError
from loopwarden.schemas.positions import default_partition
from loopwarden.streams.runtime.backoff import Backoff
from loopwarden.streams.runtime.record_queue import Header

log = logging.getLogger(__name__)


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
        linger_s: float = 0.0,
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
        self._error: BaseException | None = None
        self._last_topics: set[str] = set()
        self._before_commit: list[Callable[[], Awaitable[None]]] = []
        self.sent = 0
        self.flushes = 0
        """Flushes that sent records."""

    @property
    def delivery_error(self) -> BaseException | None:
        """The first delivery failure not yet cured by a successful flush."""
        return self._error

    @property
    def pending_records(self) -> int:
        """Records added (or kept after a failed delivery) and not yet delivered."""
        return sum(len(records) for records in self._buffers.values())

    async def idle(self) -> None:
        """Start the pending background flush now and wait until background flushes end."""
        if self._timer is not None:
            self._timer.cancel()
            self._flush_in_background()
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)

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
        self._schedule()

    def _schedule(self) -> None:
        """Flush in ``linger_s``, unless a background flush is under way: that one
        schedules the next when it ends, with everything added meanwhile.

        One background flush at a time: a flush waits for the broker twice (outputs,
        then states), and a new flush every ``linger_s`` queued behind it on the lock
        (at 1,000 events/s a commit's flush waited 2 s behind dozens of them, and so
        did the warnings).
        """
        if self._timer is None and not self._background:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(self.linger_s, self._flush_in_background)

    def before_commit(self, callback: Callable[[], Awaitable[None]]) -> None:
        """Await ``callback`` before every commit's delivery (and at stop): it adds what
        must be durable before offsets move on, such as states kept until the commit.
        The commit's offsets are already taken: records processed while it awaits are
        not part of it."""
        self._before_commit.append(callback)

    async def prepare_commit(self) -> None:
        """Await the :meth:`before_commit` callbacks (the worker's producer does, first
        thing in the flush that precedes each offset commit)."""
        for callback in self._before_commit:
            await callback()

    def deliver_last(self, topic: str) -> None:
        """Send ``topic``'s records (a table's changelog) only once every other record
        of the same flush is acknowledged.

        A state must never be durable before the outputs of the events it has
        applied: a worker killed in between would leave a successor whose restored
        state skips those events as replays, and their outputs would be lost.
        """
        self._last_topics.add(topic)

    async def flush(self) -> None:
        """Send everything added so far and wait until the broker acknowledged it.

        Outputs go first; the records of :meth:`deliver_last` topics follow once
        the outputs are acknowledged. Raises :class:`PublishError` when a record
        is still undelivered (it is kept, with every state record of the flush,
        and sent again by the next flush).
        """
        async with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            buffers, self._buffers, self._bytes = self._buffers, {}, 0
            if not buffers:
                if self._error is not None:  # nothing kept, yet a delivery failed: say so
                    error, self._error = self._error, None
                    raise PublishError(f"output not delivered: {error}") from error
                return
            self.flushes += 1
            outputs = {t: r for t, r in buffers.items() if t not in self._last_topics}
            states = {t: r for t, r in buffers.items() if t in self._last_topics}
            for phase, later in ((outputs, states), (states, {})):
                if phase:
                    await self._deliver_phase(phase, later)
            self._error = None

    async def _deliver_phase(
        self, phase: dict[str, list[_Pending]], later: dict[str, list[_Pending]]
    ) -> None:
        """Send ``phase`` and wait for it; on failure keep its undelivered records and
        all of ``later`` (not sent), latch the error and raise."""
        try:
            producer = self._producer()
            sends: list[tuple[str, list[_Pending], list[asyncio.Future[object]]]] = []
            for topic, records in phase.items():
                groups = await self._by_partition(producer, topic, records)
                for partition, group in groups.items():
                    deliveries = await self._send(producer, topic, partition, group)
                    sends.append((topic, group, deliveries))
        except Exception as exc:  # the producer cannot even take them: keep everything
            # (records already handed over may arrive too: duplicates, never losses)
            self._keep({**phase, **later})
            self._error = self._error or exc
            raise PublishError(f"output not delivered: {exc}") from exc
        failed: dict[str, list[_Pending]] = {}
        errors: list[BaseException] = []
        for topic, group, deliveries in sends:
            results = await asyncio.gather(*deliveries, return_exceptions=True)
            group_errors = [r for r in results if isinstance(r, BaseException)]
            if group_errors:
                failed.setdefault(topic, []).extend(group)
                errors.extend(group_errors)
            else:
                self.sent += len(group)
        if failed:
            self._keep({**failed, **later})
            self._error = self._error or errors[0]
            count = sum(len(group) for group in failed.values())
            raise PublishError(f"{count} output record(s) not delivered: {errors[0]}")

    async def deliver(self, backoff: Backoff | None = None) -> None:
        """Flush, retrying with ``backoff`` until everything is delivered (a commit waits)."""
        retried = 0

        def say(exc: BaseException, attempt: int, delay: float) -> None:
            nonlocal retried
            retried = attempt
            log.warning(
                "%s; %d record(s) kept, offsets not committed; retrying in %.1f s",
                exc,
                self.pending_records,
                delay,
            )

        await (backoff or Backoff(max_retries=None)).until_done(self.flush, PublishError, say)
        if retried:
            log.warning("output delivered after %d retries", retried)

    def _keep(self, undelivered: dict[str, list[_Pending]]) -> None:
        """Put undelivered records back, ahead of those added since."""
        for topic, records in undelivered.items():
            newer = self._buffers.get(topic, [])
            self._buffers[topic] = records + newer
        self._bytes = sum(
            len(r.value or b"") + len(r.key or b"") + 16
            for records in self._buffers.values()
            for r in records
        )

    def _flush_in_background(self) -> None:
        self._timer = None
        task = asyncio.ensure_future(self._flush_logged())
        self._background.add(task)
        task.add_done_callback(self._background_done)

    def _background_done(self, task: asyncio.Task[None]) -> None:
        self._background.discard(task)
        if self._buffers and self._error is None:  # after a failure: at the next add
            self._schedule()

    async def _flush_logged(self) -> None:
        try:
            await self.flush()
        except PublishError as exc:  # latched: the commit-time flush retries and raises
            log.warning("%s; kept for the next flush, offsets are not committed past them", exc)

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
                partition = 0 if record.key is None else default_partition(record.key, count)
            groups.setdefault(partition, []).append(record)
        return groups

    async def _send(
        self, producer: AIOKafkaProducer, topic: str, partition: int, records: list[_Pending]
    ) -> list[asyncio.Future[object]]:
        deliveries = []
        batch = producer.create_batch()
        for record in records:
            headers = list(record.headers)
            if (
                batch.append(key=record.key, value=record.value, timestamp=None, headers=headers)
                is not None
            ):
                continue
            deliveries.append(await _submit(producer, batch, topic, partition))
            batch = producer.create_batch()
            if (
                batch.append(key=record.key, value=record.value, timestamp=None, headers=headers)
                is not None
            ):
                continue
            raise PublishError(f"a record for {topic} is larger than a producer batch")
        if batch.record_count():
            deliveries.append(await _submit(producer, batch, topic, partition))
        return deliveries


async def _submit(
    producer: AIOKafkaProducer, batch: BatchBuilder, topic: str, partition: int
) -> asyncio.Future[object]:
    """Hand a batch to the producer, closed: aiokafka lets an open batch linger
    ``linger_ms`` more for ``send()`` to fill, and the sink has already lingered."""
    batch.close()
    future: asyncio.Future[object] = await producer.send_batch(batch, topic, partition=partition)
    return future
