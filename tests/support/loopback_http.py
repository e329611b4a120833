"""A real HTTP server on a free loopback port for the length of a test (aiohttp)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from aiohttp import web

from loopwarden.streams.tools.broker import free_port

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@contextlib.asynccontextmanager
async def serving_post(path: str, handler: Handler) -> AsyncIterator[str]:
    """Serve POST ``path`` with ``handler`` on 127.0.0.1; yields ``http://127.0.0.1:PORT``."""
    app = web.Application()
    app.router.add_post(path, handler)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


class ScriptedEndpoint:
    """A POST handler answering ``statuses`` in turn (then 200) and keeping what it got."""

    def __init__(self, *statuses: int) -> None:
        self.statuses = list(statuses)
        self.received: list[Any] = []
        self.answered: list[int] = []
        self.auth: list[str | None] = []

    async def handle(self, request: web.Request) -> web.Response:
        status = self.statuses.pop(0) if self.statuses else 200
        self.answered.append(status)
        self.auth.append(request.headers.get("Authorization"))
        self.received.append(await request.json())
        return web.Response(status=status, text="nope" if status >= 400 else "ok")
