"""Says when the broker stops answering, and when it answers again.

A refused connection makes the Kafka client log (rate-limited) errors, but a
broker that accepts connections and never answers makes it wait silently on its
request timeouts. The watchdog asks the broker for metadata every
``interval_s``; when no answer comes within ``timeout_s`` it logs one error
(what waits, and that nothing is lost), and one line when the broker is back.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger(__name__)


class BrokerWatchdog:
    """Tracks whether the broker answers a cheap request in time."""

    def __init__(
        self,
        probe: Callable[[], Awaitable[Any]],
        where: str,
        timeout_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.probe = probe
        self.where = where
        self.timeout_s = timeout_s
        self.clock = clock
        self.down_since: float | None = None

    async def check(self) -> bool:
        """Probe once; log the transitions. True when the broker answered."""
        try:
            await asyncio.wait_for(self.probe(), self.timeout_s)
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
        return True


def register_broker_watchdog(app: Any, interval_s: float = 5.0) -> BrokerWatchdog:
    """A timer on ``app`` that probes the broker with a metadata request."""

    async def probe() -> None:
        await app.producer._ensure_producer().client.fetch_all_metadata()

    watchdog = BrokerWatchdog(probe, app.loopwarden.kafka.bootstrap_servers)

    @app.timer(interval_s, name="broker_watchdog")
    async def broker_watchdog() -> None:
        await watchdog.check()

    return watchdog
