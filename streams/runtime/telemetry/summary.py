"""What a worker says at the default (info) level: ready, and a periodic summary.

Its start and rebalances are logged by
:class:`~loopwarden.streams.runtime.telemetry.sensor.LifecycleLog`;
errors by the runner and the dead-letter path, with topic, partition and offset.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from loopwarden.streams.runtime.telemetry.metrics import Totals, partition_lags
from loopwarden.streams.runtime.telemetry.sensor import describe_assignment

log = logging.getLogger("loopwarden.worker")


class Summary:
    """The one-line summary of the interval since the previous line."""

    def __init__(self, totals: Totals, now: float | None = None) -> None:
        self.totals = totals
        self._since = time.monotonic() if now is None else now
        self._events = self._warnings = self._dead = 0

    def line(self, lag: int, now: float | None = None) -> str:
        """``events`` (per second), warnings, dead letters and lag since the last call."""
        now = time.monotonic() if now is None else now
        events, warnings, dead = self.totals.sums()
        took = max(now - self._since, 1e-9)
        new_events = events - self._events
        text = (
            f"last {took:.0f} s: {new_events} events ({new_events / took:.1f}/s), "
            f"{warnings - self._warnings} warnings, {dead - self._dead} dead letters; lag {lag}"
        )
        self._since, self._events, self._warnings, self._dead = now, events, warnings, dead
        return text


def register_summary(app: Any) -> None:
    """Log when the worker is ready, and the summary every interval."""
    settings = app.loopwarden
    summary = Summary(app.metrics.totals)

    @app.task
    async def announce_ready() -> None:
        await app.tables.recovery.completed.wait()
        log.info("worker ready: %s", describe_assignment(app))

    interval = settings.telemetry.summary_interval_s
    if interval > 0:

        @app.timer(interval, name="log_summary")
        async def log_summary() -> None:
            log.info("%s", summary.line(sum(lag.lag for lag in partition_lags(app))))
