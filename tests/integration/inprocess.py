"""A worker's Faust app run inside the test's own event loop, on the real broker.

Faust's own tests drive an app in memory (``agent.test_context()``), which never
touches Kafka; Quix Streams' start the application on a real broker inside the
test. This is the latter: :func:`running_app` builds the worker's app exactly as
``loopwarden worker`` does (:func:`build_worker_app`: the same capabilities, the
same runner, the same output router), starts it with ``app.start()`` in the
running loop and waits until its consumer owns partitions. The test then
publishes with the client and reads what the app produced, and can look inside
the app (its router, its sinks, its runners) while it runs — with no worker
subprocess. It always stops the app, also when the test fails.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from loopwarden.agents.capabilities import CAPABILITIES
from loopwarden.settings import Settings
from loopwarden.streams.runtime.app import LoopwardenApp
from loopwarden.streams.tools.topics import ensure_topics
from loopwarden.worker import build_worker_app

START_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 60.0


async def _assigned(app: LoopwardenApp, timeout_s: float) -> None:
    """Wait until the app's consumer has partitions and no rebalance is under way."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not (app.consumer.assignment() and not app.rebalancing):
        if loop.time() > deadline:
            raise TimeoutError(f"the app owned no partitions within {timeout_s:.0f} s")
        await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def running_app(settings: Settings) -> AsyncIterator[LoopwardenApp]:
    """The worker app of ``settings``, started in this loop and assigned its partitions."""
    await ensure_topics(settings, CAPABILITIES)
    app = build_worker_app(settings)
    try:
        await asyncio.wait_for(app.start(), START_TIMEOUT_S)
        await _assigned(app, START_TIMEOUT_S)
        yield app
    finally:
        await asyncio.wait_for(app.stop(), STOP_TIMEOUT_S)
