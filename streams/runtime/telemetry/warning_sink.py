"""The warning metrics and the loop-health page, fed as an output sink of the router."""

from __future__ import annotations

from typing import Any

from loopwarden.streams.runtime.telemetry.loop_health import LoopHealth
from loopwarden.streams.runtime.telemetry.metrics import WorkerMetrics


class WarningTelemetry:
    """Counts each warning sent (``loopwarden.warnings``) and shows it on the
    loop-health page (:class:`LoopHealth`)."""

    outputs = frozenset({"warnings", "fleet_warnings"})

    def __init__(self, metrics: WorkerMetrics, loop_health: LoopHealth) -> None:
        self.metrics = metrics
        self.loop_health = loop_health

    def deliver(self, output: str, value: Any) -> None:
        """Count and show one warning (or fleet warning)."""
        if output == "fleet_warnings":
            self.metrics.fleet_warning(value["kind"], value["step"])
            self.loop_health.fleet(value)
            return
        self.metrics.warning(value["kind"], value["level"])
        self.loop_health.warning(value)
