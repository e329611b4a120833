"""Says when the broker stops answering, and when it answers again.

A refused connection makes the Kafka client log (rate-limited) errors, but a
broker that accepts connections and never answers makes it wait silently on its
request timeouts. The watchdog asks the broker for metadata every
``interval_s``; when no answer comes within ``timeout_s`` it logs one error
(what waits, and that nothing is lost), and one line when the broker is back.

A broker that comes back *without* loopwarden's topics (it lost its data, as the
embedded memory broker does on a restart) would leave a worker that is alive
and does nothing: the watchdog stops the worker with a clear error instead, so
that its supervisor restarts it and the restart recreates the topics.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from loopwarden.errors import BrokerError
from loopwarden.streams.runtime.workarounds import aiokafka_producer

log = logging.getLogger(__name__)


class BrokerWatchdog:
    """Tracks whether the broker answers a cheap request in time."""

    def __init__(
        self,
        probe: Callable[[], Awaitable[set[str]]],
        where: str,
        timeout_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        required_topics: frozenset[str] = frozenset(),
        on_topics_lost: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        self.probe = probe
        self.where = where
        self.timeout_s = timeout_s
        self.clock = clock
        self.required_topics = required_topics
        self.on_topics_lost = on_topics_lost
        self.down_since: float | None = None

    async def check(self) -> bool:
        """Probe once; log the transitions. True when the broker answered."""
        try:
            topics = await asyncio.wait_for(self.probe(), self.timeout_s)
        except Exception as exc:  # a timeout, a refused or reset connection
            if self.down_since is None:
                self.down_since = self.clock()
                log.error(
                    "the broker at %s does not answer (%s); processing, outputs and offset "
                    "commits wait for it, nothing is lost",
                    self.where,
                    type(exc).__name__ if isinstance(exc, TimeoutError) else exc,
                )
            return False
        if self.down_since is not None:
            log.warning(
                "the broker at %s answers again after %.0f s; catching up",
                self.where,
                self.clock() - self.down_since,
            )
            self.down_since = None
        missing = sorted(self.required_topics - topics)
        if missing and self.on_topics_lost is not None:
            reason = (
                f"the broker at {self.where} has lost topics this worker reads "
                f"({', '.join(missing)}): it lost its data; stopping so that a restart "
                "recreates them"
            )
            log.error("%s", reason)
            await self.on_topics_lost(reason)
            return False
        return True


def register_broker_watchdog(app: Any, interval_s: float = 5.0) -> BrokerWatchdog:
    """A timer on ``app`` that probes the broker with a metadata request."""

    async def probe() -> set[str]:
        cluster = await aiokafka_producer(app).client.fetch_all_metadata()
        return set(cluster.topics())

    async def stop(reason: str) -> None:
        await app.crash(BrokerError(reason))

    names = app.loopwarden.topics
    watchdog = BrokerWatchdog(
        probe,
        app.loopwarden.kafka.bootstrap_servers,
        required_topics=frozenset({names.actions, names.loop_completions, names.memory_writes}),
        on_topics_lost=stop,
    )

    @app.timer(interval_s, name="broker_watchdog")
    async def broker_watchdog() -> None:
        await watchdog.check()

    return watchdog
