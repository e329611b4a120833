"""The adapters' connection to loopwarden: publish tool calls, follow warnings.

A :class:`LoopGuard` runs on its own thread with its own event loop, so a framework
hook only hands it a tuple and returns: publishing never blocks the agent, and a
broker that is down never raises into it. The guard follows the warnings topic
(every partition, from its end, one consumer per process) and keeps the warnings of
the loops it publishes for in a :class:`~loopwarden.streams.inbox.WarningInbox`,
until the adapter's next injection point takes them.

If the broker cannot be reached the guard says so once, keeps the last
``max_queued`` events and retries every ``retry_s``; the agent keeps running.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import threading
from collections import deque
from typing import Any

from opentelemetry import context as otel_context

from loopwarden.adapters.calls import tool_call_fields
from loopwarden.errors import LoopwardenError
from loopwarden.schemas.warnings import LoopWarning
from loopwarden.settings import Settings
from loopwarden.streams.event_builder import make_action_event
from loopwarden.streams.inbox import WarningInbox, is_stop
from loopwarden.streams.publisher import AsyncPublisher
from loopwarden.streams.subscriber import WarningSubscriber

log = logging.getLogger("loopwarden.adapters")

_Event = tuple[str, str, dict[str, Any], otel_context.Context]
"""(loop id, action type, payload fields, the caller's OpenTelemetry context)"""


class LoopGuard:
    """Publishes an agent's tool calls and keeps the warnings that come back.

    >>> guard = LoopGuard(settings).start()
    >>> guard.tool_call("run-1", "search", {"q": "x"}, result="…", tool_call_id="c1")
    >>> guard.take("run-1")          # at the next model call: pending warnings
    >>> guard.stop_for("run-1")      # a stop recommendation, or None
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        bootstrap_servers: str | None = None,
        max_queued: int = 10_000,
        retry_s: float = 30.0,
    ) -> None:
        self.settings = settings or Settings()
        self.bootstrap_servers = bootstrap_servers or self.settings.kafka.bootstrap_servers
        self.retry_s = retry_s
        self._watched: set[str] = set()
        self.inbox = WarningInbox(accept=self._watched.__contains__)
        self._queued: deque[_Event] = deque(maxlen=max_queued)
        self.dropped = 0
        self._ready = threading.Event()
        self._attempted = threading.Condition()
        self.attempts = 0
        """Connection attempts so far (the first, then one every ``retry_s``)."""
        self._closing = False
        self._said_unavailable = False
        self._publisher: AsyncPublisher | None = None
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

    def watch(self, loop_id: str) -> None:
        """Keep the loop's warnings from now on (publishing for it does this too)."""
        self._watched.add(loop_id)

    def tool_call(self, loop_id: str, tool: str, args: Any = None, **fields: Any) -> None:
        """Publish one tool call (``result``, ``error``, ``tool_call_id``, ``response_id``,
        ``duration_ms`` as in :func:`~loopwarden.adapters.calls.tool_call_fields`)."""
        self.publish(loop_id, tool, **tool_call_fields(args, **fields))

    def publish(self, loop_id: str, action_type: str, **payload: Any) -> None:
        """Publish one action event in the background; never blocks, never raises. The
        event carries the caller's trace context (the framework's tool span, if any)."""
        self.watch(loop_id)
        self.start()
        event = (loop_id, action_type, payload, otel_context.get_current())
        self._loop.call_soon_threadsafe(self._enqueue, event)

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

    def take(self, loop_id: str) -> list[LoopWarning]:
        """The loop's warnings not handed out yet, oldest first."""
        return self.inbox.take(loop_id)

    def stop_for(self, loop_id: str) -> LoopWarning | None:
        """The stop recommendation in force for the loop, if any."""
        return self.inbox.stop_for(loop_id)

    def forget(self, loop_id: str) -> None:
        """The run is over: stop keeping its warnings."""
        self._watched.discard(loop_id)
        self.inbox.forget(loop_id)

    # -- the guard's thread ---------------------------------------------------------------------

    def _start_task(self) -> None:
        self._task = self._loop.create_task(self._run())

    def _enqueue(self, event: _Event) -> None:
        if self._publisher is None:
            if len(self._queued) == self._queued.maxlen:
                self.dropped += 1
            self._queued.append(event)
            return
        self._send(event)

    def _send(self, event: _Event) -> None:
        assert self._publisher is not None
        loop_id, action_type, payload, caller_context = event
        token = otel_context.attach(caller_context)  # stamped as if sent from the caller
        try:
            self._publisher.publish_event(make_action_event(loop_id, action_type, **payload))
        except LoopwardenError as exc:  # an invalid event: the agent is not told, we log it
            log.warning("loopwarden: event for loop %s not published: %s", loop_id, exc)
        finally:
            otel_context.detach(token)

    async def _run(self) -> None:
        while not self._closing:
            subscriber = WarningSubscriber(self.settings, bootstrap_servers=self.bootstrap_servers)
            publisher = AsyncPublisher(self.settings, bootstrap_servers=self.bootstrap_servers)
            try:
                await subscriber.start()  # positioned before the first event goes out
                await publisher.start()
            except (LoopwardenError, OSError) as exc:
                await subscriber.stop()
                self._unavailable(exc)
                self._count_attempt()
                await asyncio.sleep(self.retry_s)
                continue
            self._count_attempt()
            self._publisher = publisher
            while self._queued:
                self._send(self._queued.popleft())
            self._ready.set()
            log.info("loopwarden: watching this agent's loops through %s", self.bootstrap_servers)
            try:
                await asyncio.gather(self._follow(subscriber), self._check_delivery(publisher))
            except (LoopwardenError, OSError) as exc:
                self._unavailable(exc)
            finally:
                self._ready.clear()
                self._publisher = None
                await subscriber.stop()
                with contextlib.suppress(Exception):
                    await publisher.stop()

    async def _follow(self, subscriber: WarningSubscriber) -> None:
        async for warning in subscriber:
            if self.inbox.add(warning) and is_stop(warning):
                log.warning("loopwarden: stop recommended for loop %s", warning.loop_id)

    async def _check_delivery(self, publisher: AsyncPublisher) -> None:
        while True:
            await asyncio.sleep(5.0)
            await publisher.flush()  # a PublishError ends this connection; we reconnect

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
        publisher = self._publisher
        if publisher is not None:
            with contextlib.suppress(Exception):
                await publisher.flush()
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
