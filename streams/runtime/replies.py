"""Replies for request/response over the stream.

An HTTP handler publishes an event and waits for the worker's agent to process
it; the agent resolves the waiting future with its result. Both run on the
worker that owns the event's key (requests are routed there first).
"""

from __future__ import annotations

import asyncio
from typing import Any


class Replies:
    """Futures keyed by event id (several requests may wait for one event: a retry)."""

    def __init__(self) -> None:
        self._waiting: dict[str, list[asyncio.Future[Any]]] = {}

    def expect(self, event_id: str) -> asyncio.Future[Any]:
        """A future resolved when the event ``event_id`` has been processed."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(event_id, []).append(future)
        return future

    def resolve(self, event_id: str, result: Any) -> None:
        """Hand ``result`` to whoever waits for ``event_id`` (if anyone)."""
        for future in self._waiting.pop(event_id, ()):
            if not future.done():
                future.set_result(result)

    def discard(self, event_id: str, future: asyncio.Future[Any]) -> None:
        """Stop waiting with ``future`` for ``event_id``."""
        waiting = self._waiting.get(event_id, [])
        if future in waiting:
            waiting.remove(future)
            if not waiting:
                del self._waiting[event_id]
        if not future.done():
            future.cancel()
