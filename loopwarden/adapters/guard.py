"""The adapters' connection to loopwarden: publish tool calls, follow warnings.

A :class:`LoopGuard` runs on its own thread with its own event loop, so a framework
hook only hands it a tuple and returns: publishing never blocks the agent, and a
broker that is down never raises into it. The guard follows the warnings topic —
only the partitions its loops live on, each from its end, before the loop's first
event goes out (:mod:`~loopwarden.adapters.connection`) — and keeps the warnings of
its loops in a :class:`~loopwarden.streams.client.inbox.WarningInbox`, until the adapter's
next injection point takes them.

If the broker cannot be reached the guard says so once per outage, keeps the last
``max_queued`` events and retries every ``retry_s``; the agent keeps running.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import threading
import time
from collections import deque
from typing import Any

from opentelemetry import context as otel_context

from loopwarden.adapters.connection import Connection, Event
from loopwarden.adapters.guard_state import GuardState
from loopwarden.adapters.recall import memories_for
from loopwarden.errors import LoopwardenError
from loopwarden.schemas.tool_calls import HEARD_ACTION, SAID_ACTION, tool_call_fields
from loopwarden.schemas.warnings import LoopWarning
from loopwarden.settings import Settings

log = logging.getLogger("loopwarden.adapters")


class LoopGuard:
    """Publishes an agent's tool calls and keeps the warnings that come back.

    >>> guard = LoopGuard(settings).start()
    >>> guard.tool_call("run-1", "search", {"q": "x"}, result="…", tool_call_id="c1")
    >>> guard.heard("run-1", "Where is my order?")   # the person's turn
    >>> guard.said("run-1", "Could you give me the order number?")  # the agent's answer
    >>> guard.await_verdict("run-1")  # before the next model call (bounded)
    >>> guard.stop_for("run-1")      # a stop recommendation, or None
    >>> guard.note("run-1")          # the warnings to put in front of the model, or None
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        bootstrap_servers: str | None = None,
        max_queued: int = 10_000,
        retry_s: float = 30.0,
        max_loops: int = 10_000,
        loop_ttl_s: float = 3600.0,
    ) -> None:
        self.settings = settings or Settings()
        self.bootstrap_servers = bootstrap_servers or self.settings.kafka.bootstrap_servers
        self.retry_s = retry_s
        self.verdict_wait_s = self.settings.adapters.verdict_wait_ms / 1000
        """How long :meth:`await_verdict` waits at most after a published event."""
        self.state = GuardState(
            self.settings.adapters.shown_warnings, max_loops=max_loops, loop_ttl_s=loop_ttl_s
        )
        """What the guard knows of its loops, with no broker (the guard contract's pure half)."""
        self.inbox = self.state.inbox
        self._queued: deque[Event] = deque(maxlen=max_queued)
        self.dropped = 0
        self._ready = threading.Event()
        self._attempted = threading.Condition()
        self._following = threading.Condition()
        self.attempts = 0
        """Connection attempts so far (the first, then one every ``retry_s``)."""
        self._closing = False
        self._said_unavailable = False
        self._said_no_memories = False
        self._connection: Connection | None = None
        self._outbox: asyncio.Queue[Event] | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="loopwarden-guard", daemon=True
        )
        self._task: asyncio.Task[None] | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> LoopGuard:
        """Start connecting in the background (returns at once)."""
        if not self._thread.is_alive():
            self._thread.start()
            self._loop.call_soon_threadsafe(self._start_task)
        return self

    def wait_ready(self, timeout_s: float = 30.0) -> bool:
        """Block until the guard publishes and follows warnings; False on timeout."""
        return self._ready.wait(timeout_s)

    def wait_attempts(self, count: int, timeout_s: float) -> bool:
        """Block until the guard tried to connect ``count`` times; False on timeout."""
        with self._attempted:
            return self._attempted.wait_for(lambda: self.attempts >= count, timeout_s)

    @property
    def followed_partitions(self) -> frozenset[int]:
        """The warnings topic's partitions this process reads (those of its loops)."""
        connection = self._connection
        return frozenset(connection.followed) if connection is not None else frozenset()

    def wait_following(self, loop_id: str, timeout_s: float = 30.0) -> bool:
        """Block until the loop's warnings partition is followed; False on timeout."""

        def followed() -> bool:
            connection = self._connection
            return connection is not None and connection.follows(loop_id)

        with self._following:
            return self._following.wait_for(followed, timeout_s)

    def _followed(self) -> None:
        with self._following:
            self._following.notify_all()

    @property
    def running(self) -> bool:
        """The guard's thread is alive: started and not closed yet."""
        return self._thread.is_alive()

    @property
    def ready(self) -> bool:
        """Connected: events go out, warnings come in."""
        return self._ready.is_set()

    def close(self, timeout_s: float = 10.0) -> None:
        """Deliver what is queued (up to ``timeout_s``), disconnect, stop the thread."""
        if not self._thread.is_alive():
            return
        self._closing = True
        future = asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop)
        with contextlib.suppress(Exception):
            future.result(timeout_s)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout_s)

    def __enter__(self) -> LoopGuard:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what adapters call --------------------------------------------------------------------

    def watch(self, loop_id: str, **family: str) -> None:
        """Keep the loop's warnings from now on (publishing for it does this too); a loop
        is watched until ``loop_ttl_s`` after its last event, or :meth:`forget`.

        ``family`` (``parent_loop_id``, ``root_loop_id``, ``agent``, ``task``): the
        loop's place in a family of delegated loops, put on each of its events (the
        task on the first only). Its warnings partition is followed from now on, not
        from its first event: a root whose first tool call is a delegation hears what
        its family is told meanwhile."""
        if self.state.watch(loop_id, family):
            self.start()
            self._loop.call_soon_threadsafe(self._enqueue, (loop_id, None, {}, None))

    def lineage(self, loop_id: str) -> dict[str, str]:
        """The family fields of a watched loop (empty: it is its own family's root)."""
        return self.state.lineage(loop_id)

    def tool_call(self, loop_id: str, tool: str, args: Any = None, **fields: Any) -> None:
        """Publish one tool call (``result``, ``error``, ``tool_call_id``, ``response_id``,
        ``duration_ms`` as in :func:`~loopwarden.schemas.tool_calls.tool_call_fields`)."""
        self.publish(loop_id, tool, **tool_call_fields(args, tool=tool, **fields))

    def publish(self, loop_id: str, action_type: str, **payload: Any) -> None:
        """Publish one action event in the background; never blocks, never raises. The
        event carries the caller's trace context (the framework's tool span, if any)."""
        self.state.outgoing(loop_id, payload)
        self.start()
        event = (loop_id, action_type, payload, otel_context.get_current())
        self._loop.call_soon_threadsafe(self._enqueue, event)

    def said(self, loop_id: str, text: str, **fields: Any) -> None:
        """Publish the agent's message turn: an answer without a tool call (``fields``:
        ``response_id``, ``agent``). Restating the same thing in other words is a loop
        of its own (``restated_message``)."""
        self.publish(loop_id, SAID_ACTION, turn="message", result=text, **fields)

    def heard(self, loop_id: str, text: str) -> None:
        """Publish the counterpart's turn (what the person said to the agent): heard,
        never counted as the agent's action, so a person who keeps answering does not
        hide the agent asking again."""
        self.publish(loop_id, HEARD_ACTION, turn="counterpart", result=text)

    def end(self, loop_id: str, *, reason: str = "finalized", success: bool | None = None) -> None:
        """Mark the loop's end: a terminating message turn (``reason``: finalized, spin, …)."""
        self.publish(
            loop_id,
            "loop_end",
            turn="message",
            terminated=True,
            success=success,
            result=reason,
        )

    def await_verdict(self, loop_id: str) -> float:
        """Before a model call: wait for the warnings about the loop's latest published
        event, until one about it (or a stop) arrives or ``verdict_wait_s``
        (``adapters.verdict_wait_ms``) has passed since that event was handed over; the
        seconds waited. No wait when nothing was published since the last call, once a
        stop is in force for the loop or its family's root, or while the broker is
        unreachable."""
        due = self.state.due(loop_id)
        if due is None or not self.ready:
            return 0.0
        handed_over, event_id = due
        remaining = handed_over + self.verdict_wait_s - time.monotonic()
        if remaining <= 0:
            return 0.0
        started = time.monotonic()
        self.inbox.wait_answer(loop_id, event_id, timeout_s=remaining)
        return time.monotonic() - started

    def recall(self, loop_id: str, task: str | None) -> int:
        """At a run's start: the memories of ``adapters.memory_scope`` that fit ``task``
        (:mod:`~loopwarden.adapters.recall`), kept in the loop's note; how many (0 when
        off, nothing fits, or no worker answers: said once in the log, the run goes on)."""
        try:
            contents = memories_for(self.settings, task)
        except LoopwardenError as exc:
            if not self._said_no_memories:
                self._said_no_memories = True
                log.warning("loopwarden: no memories for this agent's runs: %s", exc)
            return 0
        self.state.learned(loop_id, contents)
        return len(contents)

    def note(self, loop_id: str) -> str | None:
        """The note for the loop's next model call: its latest warnings (new ones
        included), to put in the request only; None while it has been told nothing."""
        return self.state.note(loop_id)

    def take(self, loop_id: str) -> list[LoopWarning]:
        """The loop's warnings not handed out yet, oldest first."""
        return self.state.take(loop_id)

    def stop_for(self, loop_id: str) -> LoopWarning | None:
        """The stop recommendation in force for the loop, if any."""
        return self.state.stop_for(loop_id)

    def forget(self, loop_id: str) -> None:
        """The run is over: stop keeping its warnings."""
        self.state.forget(loop_id)

    # -- the guard's thread ---------------------------------------------------------------------

    def _start_task(self) -> None:
        self._task = self._loop.create_task(self._run())

    def _enqueue(self, event: Event) -> None:
        if self._outbox is None:
            if event[1] is None:
                return  # follow only: the next connection follows every watched loop
            if len(self._queued) == self._queued.maxlen:
                self.dropped += 1
            self._queued.append(event)
            return
        self._outbox.put_nowait(event)

    async def _run(self) -> None:
        while not self._closing:
            connection = Connection(
                self.settings, self.bootstrap_servers, self.inbox, self._followed
            )
            try:
                await connection.open()
            except (LoopwardenError, OSError) as exc:
                self._unavailable(exc)
                self._count_attempt()
                await asyncio.sleep(self.retry_s)
                continue
            self._count_attempt()
            self._said_unavailable = False  # a later outage is reported again, once
            self._connection = connection
            outbox: asyncio.Queue[Event] = asyncio.Queue()
            for loop_id in self.state.watched():  # the watched loops' warnings first
                outbox.put_nowait((loop_id, None, {}, None))
            while self._queued:  # in order, ahead of anything published from now on
                outbox.put_nowait(self._queued.popleft())
            self._outbox = outbox
            self._ready.set()
            log.info("loopwarden: watching this agent's loops through %s", self.bootstrap_servers)
            try:
                async with asyncio.TaskGroup() as group:  # one fails: both end
                    group.create_task(self._send_all(connection, outbox))
                    group.create_task(connection.run())
            except* (LoopwardenError, OSError) as failed:
                self._unavailable(failed.exceptions[0])
            finally:
                self._ready.clear()
                self._outbox = self._connection = None
                while not outbox.empty():  # kept for the next connection
                    self._queued.append(outbox.get_nowait())
                await connection.close()

    async def _send_all(self, connection: Connection, outbox: asyncio.Queue[Event]) -> None:
        while True:
            event = await outbox.get()
            try:
                await connection.send(event)
            except BaseException:
                self._queued.append(event)  # first in line for the next connection
                raise
            finally:
                outbox.task_done()

    def _count_attempt(self) -> None:
        with self._attempted:
            self.attempts += 1
            self._attempted.notify_all()

    def _unavailable(self, exc: BaseException) -> None:
        if not self._said_unavailable:
            self._said_unavailable = True
            log.warning(
                "loopwarden: %s — the agent keeps running unwatched; retrying every %.0f s",
                exc,
                self.retry_s,
            )

    async def _shutdown(self) -> None:
        connection, outbox = self._connection, self._outbox
        if connection is not None and outbox is not None:
            with contextlib.suppress(Exception):
                await outbox.join()
                await connection.flush()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


_shared: LoopGuard | None = None
_shared_lock = threading.Lock()


def shared_guard(settings: Settings | None = None) -> LoopGuard:
    """The process's guard (created on first use from ``settings`` or the environment,
    closed at exit): every adapter without an explicit guard uses it."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = LoopGuard(settings).start()
            atexit.register(_shared.close)
        return _shared
