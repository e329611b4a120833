"""One connection of a :class:`~loopwarden.adapters.guard.LoopGuard` to the broker.

It publishes the guard's events, and follows the warnings of only the partitions its
loops live on: a process running a few agents reads a few partitions of the warnings
topic, not all of it. A partition is followed (positioned at its end) *before* the
first event of a loop on it goes out, so no verdict on that event is missed — or as
soon as the loop is watched (an event with no action type: follow only), so a loop
that is told something before its first event (a root whose first tool call is the
delegation its family is warned for) hears it.

The verdicts topic's partition of the loop is followed the same way (unless
``adapters.verdicts`` is off, or the worker's cluster has no verdicts topic yet): the
worker's answer to each event (:mod:`loopwarden.schemas.verdicts`) ends the guard's
wait before the next model call as soon as the worker is done with the event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from aiokafka.errors import KafkaError
from opentelemetry import context as otel_context

from loopwarden.errors import LoopwardenError, PublishError
from loopwarden.settings import Settings
from loopwarden.streams.client.event_builder import make_action_event
from loopwarden.streams.client.inbox import WarningInbox, is_stop
from loopwarden.streams.client.publisher import AsyncPublisher, default_partition
from loopwarden.streams.client.subscriber import VerdictSubscriber, WarningSubscriber

log = logging.getLogger("loopwarden.adapters")

Event = tuple[str, str | None, dict[str, Any], otel_context.Context | None]
"""(loop id, action type, payload fields, the caller's OpenTelemetry context); no action
type: only follow the loop's warnings."""


class Connection:
    """The publisher, and one warning follower per partition the loops use."""

    def __init__(
        self,
        settings: Settings,
        bootstrap_servers: str,
        inbox: WarningInbox,
        on_follow: Callable[[], None] | None = None,
    ) -> None:
        """``on_follow`` is called each time another partition is followed."""
        self.settings = settings
        self.on_follow = on_follow
        self.bootstrap_servers = bootstrap_servers
        self.inbox = inbox
        self.publisher = AsyncPublisher(settings, bootstrap_servers=bootstrap_servers)
        self.followed: dict[int, tuple[WarningSubscriber, asyncio.Task[None]]] = {}
        self.verdicts_followed: dict[int, tuple[VerdictSubscriber, asyncio.Task[None]]] = {}
        self._warning_partitions = 0
        self._verdict_partitions = 0
        """0: no verdicts followed (off, or the topic does not exist)."""
        self._failed: asyncio.Future[None] | None = None

    async def open(self) -> None:
        """Connect the publisher and read the warnings topic's partition count."""
        self._failed = asyncio.get_running_loop().create_future()
        await self.publisher.start()
        try:
            topics = self.settings.topics
            self._warning_partitions = len(await self.publisher.topic_partitions(topics.warnings))
            if self.settings.adapters.verdicts:
                try:
                    verdicts = await self.publisher.topic_partitions(topics.verdicts)
                except PublishError:
                    verdicts = []
                self._verdict_partitions = len(verdicts)
                if not verdicts:
                    log.info(
                        "loopwarden: no topic %r: the guard waits for warnings only "
                        "(a worker of this version creates it)",
                        topics.verdicts,
                    )
        except BaseException:
            await self.publisher.stop()
            raise

    async def send(self, event: Event) -> None:
        """Follow the loop's warning partition if needed, then publish the event."""
        loop_id, action_type, payload, caller_context = event
        await self.follow(self.partition_of(loop_id))
        if self._verdict_partitions:
            await self.follow_verdicts(self.verdict_partition_of(loop_id))
        if action_type is None or caller_context is None:
            return  # a loop watched before its first event: followed, nothing to send
        token = otel_context.attach(caller_context)  # stamped as if sent from the caller
        try:
            self.publisher.publish_event(make_action_event(loop_id, action_type, **payload))
        except LoopwardenError as exc:  # an invalid event: the agent is not told, we log it
            log.warning("loopwarden: event for loop %s not published: %s", loop_id, exc)
        finally:
            otel_context.detach(token)

    def partition_of(self, loop_id: str) -> int:
        """The warnings topic's partition of ``loop_id``'s warnings."""
        return default_partition(loop_id.encode(), self._warning_partitions)

    def verdict_partition_of(self, loop_id: str) -> int:
        """The verdicts topic's partition of ``loop_id``'s verdicts."""
        return default_partition(loop_id.encode(), self._verdict_partitions)

    def follows(self, loop_id: str) -> bool:
        """The loop's warnings (and verdicts, when followed at all) are followed."""
        if self.partition_of(loop_id) not in self.followed:
            return False
        return not self._verdict_partitions or (
            self.verdict_partition_of(loop_id) in self.verdicts_followed
        )

    async def follow_verdicts(self, partition: int) -> None:
        """Read the verdicts of ``partition`` from its end on (once per connection); a
        topic that cannot be read (no Read ACL) is said once, and not followed again."""
        if partition in self.verdicts_followed:
            return
        subscriber = VerdictSubscriber(
            self.settings, bootstrap_servers=self.bootstrap_servers, partition=partition
        )
        try:
            await self._start(subscriber, self._read_verdicts, self.verdicts_followed, partition)
        except (LoopwardenError, KafkaError) as exc:
            self._verdict_partitions = 0
            log.warning(
                "loopwarden: the verdicts topic cannot be followed (%s): the guard waits "
                "for warnings only, up to adapters.verdict_wait_ms on every step",
                exc,
            )

    async def follow(self, partition: int) -> None:
        """Read the warnings of ``partition`` from its end on (once per connection)."""
        if partition in self.followed:
            return
        subscriber = WarningSubscriber(
            self.settings, bootstrap_servers=self.bootstrap_servers, partition=partition
        )
        await self._start(subscriber, self._read, self.followed, partition)

    async def _start(
        self,
        subscriber: Any,
        read: Callable[[Any], Coroutine[Any, Any, None]],
        followed: dict[int, Any],
        partition: int,
    ) -> None:
        """Start ``subscriber`` and the task that reads it into the inbox."""
        await subscriber.start()
        task = asyncio.create_task(read(subscriber))
        task.add_done_callback(self._ended)
        followed[partition] = (subscriber, task)
        if self.on_follow is not None:
            self.on_follow()

    async def run(self) -> None:
        """Until a follower or a delivery fails (a :class:`LoopwardenError` or ``OSError``)."""
        assert self._failed is not None
        delivery = asyncio.create_task(self._check_delivery())
        try:
            done, _ = await asyncio.wait(
                {self._failed, delivery}, return_when=asyncio.FIRST_COMPLETED
            )
            for finished in done:
                finished.result()  # raises what ended it
        finally:
            delivery.cancel()

    async def flush(self) -> None:
        """Wait until the published events are acknowledged."""
        await self.publisher.flush()

    async def close(self) -> None:
        """Stop the followers and the publisher."""
        followers: list[tuple[Any, asyncio.Task[None]]] = [
            *self.followed.values(),
            *self.verdicts_followed.values(),
        ]
        for subscriber, task in followers:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
            await subscriber.stop()
        self.followed.clear()
        self.verdicts_followed.clear()
        with contextlib.suppress(Exception):
            await self.publisher.stop()

    async def _read(self, subscriber: WarningSubscriber) -> None:
        async for warning in subscriber:
            if self.inbox.add(warning) and is_stop(warning):
                log.warning("loopwarden: stop recommended for loop %s", warning.loop_id)

    async def _read_verdicts(self, subscriber: VerdictSubscriber) -> None:
        async for verdict in subscriber:
            self.inbox.answer(verdict)

    def _ended(self, task: asyncio.Task[None]) -> None:
        if task.cancelled() or self._failed is None or self._failed.done():
            return
        error = task.exception()
        self._failed.set_exception(error or LoopwardenError("a warning follower ended"))

    async def _check_delivery(self) -> None:
        while True:
            await asyncio.sleep(5.0)
            await self.publisher.flush()  # a PublishError ends this connection
