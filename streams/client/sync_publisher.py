"""The synchronous publisher: an :class:`AsyncPublisher` on a background thread."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from opentelemetry.trace import TracerProvider

from loopwarden.errors import PublishError
from loopwarden.schemas.events import ActionEvent, validate_action
from loopwarden.schemas.tasks import Advice
from loopwarden.settings import Settings
from loopwarden.streams.client.publisher import AsyncPublisher, encode_event, make_action_event


class Publisher:
    """Synchronous publisher for agent loops that are not asyncio.

    Runs an :class:`AsyncPublisher` on a background thread; ``publish`` returns
    the event id at once and ``flush``/``close`` wait for delivery.

    >>> with Publisher(settings) as publisher:
    ...     publisher.publish("loop-1", "shell", params={"cmd": "ls"})
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        bootstrap_servers: str | None = None,
        topic: str | None = None,
        batching: bool = True,
        timeout_s: float = 30.0,
        tracer_provider: TracerProvider | None = None,
    ) -> None:
        self._timeout_s = timeout_s
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="loopwarden-publisher", daemon=True
        )
        self._async = AsyncPublisher(
            settings,
            bootstrap_servers=bootstrap_servers,
            topic=topic,
            batching=batching,
            tracer_provider=tracer_provider,
        )
        self._started = False

    def start(self) -> Publisher:
        """Start the background loop and connect."""
        self._thread.start()
        try:
            self._call(self._async.start())
        except BaseException:
            self._shutdown_loop()
            raise
        self._started = True
        return self

    def publish(self, loop_id: str, action_type: str, **fields: Any) -> str:
        """Build, validate and enqueue one action event; return its event id."""
        return self.publish_event(make_action_event(loop_id, action_type, **fields))

    def publish_event(self, event: ActionEvent | Mapping[str, Any]) -> str:
        """Enqueue an already built event (or a dict that is validated first)."""
        if not self._started:
            raise PublishError("publisher is not started")
        if not isinstance(event, ActionEvent):
            event = validate_action(dict(event))
        event = self._async.spans.stamp(event)  # in the caller's thread: its current span
        data = encode_event(event)
        self._loop.call_soon_threadsafe(
            self._async.enqueue, event.loop_id, event.event_id, data, event.trace_context
        )
        return event.event_id

    def start_task(self, loop_id: str, task_description: str, **fields: Any) -> Advice:
        """Publish a task start and return the worker's advice (see
        :func:`loopwarden.streams.client.tasks.start_task`; ``timeout_s`` defaults to 30 s)."""
        from loopwarden.streams.client.tasks import start_task

        timeout_s = fields.get("timeout_s", 30.0)
        coro = start_task(self._async, loop_id, task_description, **fields)
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout_s + 10)

    def end_task(self, loop_id: str, success: bool, **fields: Any) -> str:
        """Publish the end of the loop's task behind its actions (``feedback_score``,
        ``reason``) and wait for the broker's ack."""
        from loopwarden.streams.client.tasks import end_task

        result: str = self._call(end_task(self._async, loop_id, success, **fields))
        return result

    def flush(self) -> None:
        """Wait until every published event is acknowledged by the broker."""
        self._call(self._async.flush())

    def close(self) -> None:
        """Flush, disconnect and stop the background thread."""
        if not self._started:
            return
        self._started = False
        try:
            self._call(self._async.stop())
        finally:
            self._shutdown_loop()

    def __enter__(self) -> Publisher:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(self._timeout_s)

    def _shutdown_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(self._timeout_s)
        self._loop.close()
