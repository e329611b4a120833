"""The worker's operational endpoints on its web port.

- ``GET /health``: liveness — the event loop answers (200).
- ``GET /ready``: 200 once the worker has joined its consumer group and its tables
  are recovered, 503 with the reason before that and during a rebalance.
- ``GET /metrics``: the Prometheus text format of :mod:`.metrics`
  (``telemetry.prometheus``).
- ``GET /loops``: the live loop-health page (static HTML that polls
  ``/loops/health.json`` every ``interval`` seconds; no build step).

With ``api.protect_status`` the loop data needs the API token like the status
endpoint (``Authorization: Bearer …``; the page reads it from ``#token=…``).
"""

from __future__ import annotations

import hmac
import time
from importlib import resources
from typing import Any

from faust.web import Request, Response, View
from prometheus_client import generate_latest

from loopwarden.streams.runtime.telemetry.metrics import partition_lags
from loopwarden.streams.runtime.telemetry.sensor import LifecycleLog

PROMETHEUS_TEXT = "text/plain; version=0.0.4"
ACTION_AGENT = "monitor_actions"
"""The agent whose events are the actions agents published."""
PAGE = resources.files(__package__).joinpath("loop_health.html")


def readiness(app: Any) -> tuple[bool, str]:
    """(ready, why not): joined the group, no rebalance under way, tables recovered, no
    agent paused on a record (its storage or output away)."""
    sensor = next((s for s in app.sensors if isinstance(s, LifecycleLog)), None)
    if sensor is None or sensor.rebalances == 0:
        return False, "not yet joined the consumer group"
    if app.rebalancing:
        return False, "rebalancing"
    recovery = app.tables.recovery
    if getattr(app, "in_recovery", False) or not recovery.completed.is_set():
        return False, "recovering tables"
    for name, runner in getattr(app, "runners", {}).items():
        if runner.paused is not None:
            return False, f"{name} paused: {runner.paused}"
    return True, "ready"


class Throughput:
    """Rates per second of running totals, between two readings at least a second apart."""

    def __init__(self, counters: int = 3) -> None:
        self._last: tuple[float, tuple[int, ...]] | None = None
        self.rate: tuple[float, ...] = (0.0,) * counters

    def update(self, totals: tuple[int, ...], now: float) -> tuple[float, ...]:
        """The rate of each of ``totals`` since the previous reading."""
        if self._last is None:
            self._last = (now, totals)
        elif now - self._last[0] >= 1.0:
            then, before = self._last
            elapsed = now - then
            self.rate = tuple((t - b) / elapsed for t, b in zip(totals, before, strict=True))
            self._last = (now, totals)
        return self.rate


def health_snapshot(
    app: Any, throughput: Throughput, now: float | None = None, loop_id: str | None = None
) -> dict[str, Any]:
    """Everything the loop-health page shows (with ``loop_id``: that loop's view too)."""
    now = time.time() if now is None else now
    totals = app.metrics.totals
    events, warnings, dead = totals.sums()
    actions = totals.events.get(ACTION_AGENT, 0)  # the agents' actions, not every agent's work
    actions_per_s, warnings_per_s, dead_per_s = throughput.update(
        (actions, warnings, dead), time.monotonic()
    )
    ready, why = readiness(app)
    lags = partition_lags(app)
    behind = [lag for lag in lags if lag.lag]
    return {
        "at": now,
        "worker": {"app_id": app.conf.id, "ready": ready, "status": why},
        "actions": actions,
        "actions_per_s": round(actions_per_s, 1),
        "events": events,
        "warnings": warnings,
        "warnings_per_s": round(warnings_per_s, 2),
        "dead_letters": dict(totals.dead_letters),
        "dead_letters_per_s": round(dead_per_s, 2),
        "lag": {
            "total": sum(lag.lag for lag in lags),
            "partitions": [
                {"topic": lag.topic, "partition": lag.partition, "lag": lag.lag} for lag in behind
            ],
            "partitions_at_zero": len(lags) - len(behind),
        },
        **app.loop_health.snapshot(now),
        **({"loop": app.loop_health.loop(loop_id)} if loop_id else {}),
    }


def register_telemetry_web(app: Any) -> None:
    """Add /health, /ready, /metrics and the loop-health page to the worker's web server."""
    settings = app.loopwarden
    throughput = Throughput()

    def authorised(request: Request) -> bool:
        token = settings.api.token
        if not settings.api.protect_status or token is None:
            return True
        given = request.headers.get("Authorization", "")
        return hmac.compare_digest(given, f"Bearer {token.get_secret_value()}")

    @app.page("/health")
    class Health(View):
        async def get(self, request: Request) -> Response:
            return self.json({"status": "alive"})

    @app.page("/ready")
    class Ready(View):
        async def get(self, request: Request) -> Response:
            ready, why = readiness(app)
            return self.json({"ready": ready, "status": why}, status=200 if ready else 503)

    if app.telemetry.registry is not None:
        registry = app.telemetry.registry

        @app.page("/metrics")
        class Metrics(View):
            async def get(self, request: Request) -> Response:
                # aiohttp wants the charset apart from the content type
                return self.bytes(generate_latest(registry), content_type=PROMETHEUS_TEXT)

    @app.page("/loops")
    class LoopsPage(View):
        async def get(self, request: Request) -> Response:
            return self.html(PAGE.read_text(encoding="utf-8"))

    @app.page("/loops/health.json")
    class LoopsHealth(View):
        async def get(self, request: Request) -> Response:
            if not authorised(request):
                return self.json({"error": "missing or wrong API token"}, status=401)
            loop_id = request.query.get("loop") or None
            return self.json(health_snapshot(app, throughput, loop_id=loop_id))
