"""Subscribing to loopwarden's output topics as async iterators.

>>> async with WarningSubscriber(settings, loop_id="loop-1") as warnings:
...     async for warning in warnings:
...         context.append(warning.timeline_message)

A subscriber for one loop reads only the partition that loop's key maps to and
keeps the records with that key. Subscribers do not join a consumer group: every
subscriber sees every warning (pass ``group_id`` to share the work instead).
Warnings re-sent after a worker restart carry the same ``warning_id`` and are
dropped (``dedupe=True``).

Starting at the end of a topic probes the true end offset (see
:mod:`loopwarden.streams.client.offsets`): records already written when the subscriber
starts are not delivered, records written after it are.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Callable
from types import TracebackType
from typing import Any, Generic, Self, TypeVar

from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition
from pydantic import ValidationError

from loopwarden.errors import EventDecodeError, LoopwardenError
from loopwarden.schemas import codec
from loopwarden.schemas.dead_letter import DeadLetter
from loopwarden.schemas.reflection import ReflectionRequest
from loopwarden.schemas.verdicts import Verdict
from loopwarden.schemas.warnings import LoopWarning
from loopwarden.settings import Settings
from loopwarden.streams.client.connect import start_client, topic_partitions
from loopwarden.streams.client.fetch_wait import (
    GETMANY_TIMEOUT_MS,
    ROUTINE_TIMEOUT_MS,
    fetch_wait_follows_traffic,
)
from loopwarden.streams.client.offsets import probe_end_offsets
from loopwarden.streams.client.publisher import default_partition
from loopwarden.streams.client.security import client_options

log = logging.getLogger(__name__)

T = TypeVar("T")
_DEDUPE_MAX = 50_000


class TopicSubscriber(Generic[T]):
    """Follow one topic (optionally one loop) and yield parsed records."""

    def __init__(
        self,
        topic: str,
        parse: Callable[[ConsumerRecord[Any, Any]], T],
        settings: Settings | None = None,
        *,
        loop_id: str | None = None,
        from_beginning: bool = False,
        group_id: str | None = None,
        bootstrap_servers: str | None = None,
        identity: Callable[[T], str] | None = None,
        partition: int | None = None,
    ) -> None:
        """``partition``: read only that partition, every key (default: every partition,
        or the partition of ``loop_id``)."""
        self.settings = settings or Settings()
        self.partition = partition
        self.topic = topic
        self.loop_id = loop_id
        self.from_beginning = from_beginning
        self.group_id = group_id
        self.bootstrap_servers = bootstrap_servers or self.settings.kafka.bootstrap_servers
        self._parse = parse
        self._identity = identity
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._fetched: deque[T] = deque()
        """Items fetched and not handed out yet: an ``async for`` left early (a break,
        :meth:`collect` reaching its count) leaves them to the next one."""
        self._consumer: AIOKafkaConsumer | None = None
        self._key = loop_id.encode() if loop_id is not None else None

    async def start(self) -> None:
        """Connect and fix the start position (end of topic unless ``from_beginning``)."""
        self._fetched.clear()  # what a previous connection fetched is read again
        consumer = AIOKafkaConsumer(
            bootstrap_servers=self.bootstrap_servers,
            group_id=self.group_id,
            enable_auto_commit=self.group_id is not None,
            fetch_max_wait_ms=self.settings.kafka.fetch_max_wait_ms,
            consumer_timeout_ms=ROUTINE_TIMEOUT_MS,
            auto_offset_reset="earliest" if self.from_beginning else "latest",
            **client_options(self.settings.kafka.security),
        )
        await start_client(consumer, self.bootstrap_servers)
        kafka = self.settings.kafka
        fetch_wait_follows_traffic(
            consumer._fetcher, kafka.fetch_max_wait_ms, kafka.idle_fetch_max_wait_ms
        )
        self._consumer = consumer
        try:
            if self.group_id is not None:
                consumer.subscribe([self.topic])
                return
            partitions = await topic_partitions(consumer, self.topic)
            if not partitions:
                raise LoopwardenError(f"topic {self.topic!r} does not exist")
            if self._key is not None:
                partitions = {default_partition(self._key, len(partitions))}
            elif self.partition is not None:
                if self.partition not in partitions:
                    raise LoopwardenError(f"topic {self.topic!r} has no partition {self.partition}")
                partitions = {self.partition}
            assigned = [TopicPartition(self.topic, p) for p in sorted(partitions)]
            consumer.assign(assigned)
            if self.from_beginning:
                await consumer.seek_to_beginning(*assigned)
                for tp in assigned:  # resolve now, not on the first fetch
                    await consumer.position(tp)
            else:
                await self._seek_to_end(consumer, assigned)
        except BaseException:
            await self.stop()
            raise

    async def _seek_to_end(
        self, consumer: AIOKafkaConsumer, assigned: list[TopicPartition]
    ) -> None:
        ends = await consumer.end_offsets(assigned)
        if self.settings.kafka.probe_end_offsets:
            ends = await probe_end_offsets(
                self.bootstrap_servers,
                ends,
                fetch_max_wait_ms=self.settings.kafka.fetch_max_wait_ms,
                security=self.settings.kafka.security,
            )
        for tp in assigned:
            consumer.seek(tp, ends[tp])

    async def probe_broker(self) -> None:
        """Ask the broker for its topics (a metadata request); raises when it does not
        answer. Nothing to ask before :meth:`start`."""
        if self._consumer is not None:
            await self._consumer.topics()

    async def stop(self) -> None:
        """Disconnect."""
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            await consumer.stop()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    def __aiter__(self) -> AsyncIterator[T]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[T]:
        if self._consumer is None:
            raise LoopwardenError("subscriber is not started")
        fetched = self._fetched
        while self._consumer is not None:
            while fetched:
                yield fetched.popleft()
            batches = await self._consumer.getmany(timeout_ms=GETMANY_TIMEOUT_MS, max_records=1000)
            for records in batches.values():
                for record in records:
                    if self._key is not None and record.key != self._key:
                        continue
                    fetched.extend(i for i in self._items_of(record) if not self._duplicate(i))

    async def collect(self, count: int, timeout_s: float) -> list[T]:
        """Gather ``count`` items or whatever arrived within ``timeout_s``."""
        items: list[T] = []

        async def gather() -> None:
            async for item in self:
                items.append(item)
                if len(items) >= count:
                    return

        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(gather(), timeout_s)
        return items

    def _items_of(self, record: ConsumerRecord[Any, Any]) -> list[T]:
        """The items a record holds (one; none when it is unreadable)."""
        item = self._parse_or_skip(record)
        return [] if item is None else [item]

    def _parse_or_skip(self, record: ConsumerRecord[Any, Any]) -> T | None:
        try:
            return self._parse(record)
        except (EventDecodeError, ValidationError, ValueError) as exc:
            log.warning(
                "skipping unreadable record %s[%d]@%d: %s",
                record.topic,
                record.partition,
                record.offset,
                exc,
            )
            return None

    def _duplicate(self, item: T) -> bool:
        if self._identity is None:
            return False
        identity = self._identity(item)
        if identity in self._seen:
            return True
        self._seen[identity] = None
        if len(self._seen) > _DEDUPE_MAX:
            self._seen.popitem(last=False)
        return False


def _parse_warning(record: ConsumerRecord[Any, Any]) -> LoopWarning:
    return LoopWarning.model_validate(codec.loads(record.value))


def _parse_verdict(record: ConsumerRecord[Any, Any]) -> Verdict:
    return Verdict.model_validate(codec.loads(record.value))


def _parse_request(record: ConsumerRecord[Any, Any]) -> ReflectionRequest:
    return ReflectionRequest.model_validate(codec.loads(record.value))


def _parse_dead_letter(record: ConsumerRecord[Any, Any]) -> DeadLetter:
    headers = [(k, bytes(v)) for k, v in (record.headers or ())]
    return DeadLetter.from_record(record.value or b"", record.key, headers)


class WarningSubscriber(TopicSubscriber[LoopWarning]):
    """Warnings for one loop (``loop_id``) or all loops, de-duplicated by ``warning_id``."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        loop_id: str | None = None,
        from_beginning: bool = False,
        group_id: str | None = None,
        bootstrap_servers: str | None = None,
        dedupe: bool = True,
        partition: int | None = None,
    ) -> None:
        settings = settings or Settings()
        super().__init__(
            settings.topics.warnings,
            _parse_warning,
            settings,
            loop_id=loop_id,
            from_beginning=from_beginning,
            group_id=group_id,
            bootstrap_servers=bootstrap_servers,
            identity=(lambda w: w.warning_id) if dedupe else None,
            partition=partition,
        )


class VerdictSubscriber(TopicSubscriber[Verdict]):
    """Verdicts (every action event's answer) of one partition, one loop or all loops."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        loop_id: str | None = None,
        bootstrap_servers: str | None = None,
        partition: int | None = None,
    ) -> None:
        settings = settings or Settings()
        super().__init__(
            settings.topics.verdicts,
            _parse_verdict,
            settings,
            loop_id=loop_id,
            bootstrap_servers=bootstrap_servers,
            partition=partition,
        )


class ReflectionRequestSubscriber(TopicSubscriber[ReflectionRequest]):
    """Reflection requests (for analysts), de-duplicated by ``request_id``."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        loop_id: str | None = None,
        from_beginning: bool = False,
        group_id: str | None = None,
    ) -> None:
        settings = settings or Settings()
        super().__init__(
            settings.topics.reflection_requests,
            _parse_request,
            settings,
            loop_id=loop_id,
            from_beginning=from_beginning,
            group_id=group_id,
            identity=lambda r: r.request_id,
        )


class DeadLetterSubscriber(TopicSubscriber[DeadLetter]):
    """Dead letters with their reason and source position.

    ``loop_id`` keeps the dead letters whose original record key was that loop id.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        loop_id: str | None = None,
        from_beginning: bool = False,
    ) -> None:
        settings = settings or Settings()
        super().__init__(
            settings.topics.dead_letter,
            _parse_dead_letter,
            settings,
            loop_id=loop_id,
            from_beginning=from_beginning,
        )
