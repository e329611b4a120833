"""The seed's experience metrics (seed 004 §6) as OpenTelemetry instruments.

- retrieval hit rate: ``loopwarden.experience.matches`` by strategy (every strategy
  but ``reflexion_explore`` is a hit);
- retrieval time: ``loopwarden.experience.match.duration``;
- replay success rate and reuse count: ``loopwarden.experience.replays`` by outcome;
- total experiences and average experience size: gauges refreshed by maintenance.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from opentelemetry.metrics import CallbackOptions, Meter, Observation

from loopwarden.streams.runtime.telemetry.metrics import LATENCY_BUCKETS


class ExperienceMetrics:
    """Instruments of the experience agent, with plain totals for logs and tests."""

    def __init__(self, meter: Meter) -> None:
        self.matches: Counter[str] = Counter()
        self.replays: Counter[str] = Counter()
        self.learned: Counter[str] = Counter()
        self.stats: dict[str, Any] = {}
        self._matches = meter.create_counter(
            "loopwarden.experience.matches",
            unit="{task}",
            description="Task starts answered, by strategy (all but reflexion_explore hit).",
        )
        self._duration = meter.create_histogram(
            "loopwarden.experience.match.duration",
            unit="s",
            description="Time to match a task to experience and build its advice.",
            explicit_bucket_boundaries_advisory=LATENCY_BUCKETS,
        )
        self._replays = meter.create_counter(
            "loopwarden.experience.replays",
            unit="{task}",
            description="Replays of an experience that ended, by outcome (reuse count).",
        )
        self._learned = meter.create_counter(
            "loopwarden.experience.learned",
            unit="{experience}",
            description="Experiences stored, by outcome (success or failure).",
        )
        meter.create_observable_gauge(
            "loopwarden.experience.total",
            callbacks=[self._observe("total_experiences")],
            unit="{experience}",
            description="Experiences in the store (at the last maintenance cycle).",
        )
        meter.create_observable_gauge(
            "loopwarden.experience.size.average",
            callbacks=[self._observe("avg_experience_size_kb")],
            unit="KiBy",
            description="Average stored experience size (at the last maintenance cycle).",
        )

    def _observe(self, name: str) -> Any:
        def callback(options: CallbackOptions) -> Iterable[Observation]:
            value = self.stats.get(name)
            return [] if value is None else [Observation(value)]

        return callback

    def matched(self, strategy: str, seconds: float) -> None:
        """One task start answered."""
        self.matches[strategy] += 1
        self._matches.add(1, {"strategy": strategy})
        self._duration.record(seconds, {"strategy": strategy})

    def replayed(self, success: bool) -> None:
        """A replay ended."""
        outcome = "success" if success else "failure"
        self.replays[outcome] += 1
        self._replays.add(1, {"outcome": outcome})

    def stored(self, outcome: str, count: int = 1) -> None:
        """Experiences learned."""
        self.learned[outcome] += count
        self._learned.add(count, {"outcome": outcome})

    @property
    def hit_rate(self) -> float | None:
        """Share of task starts that found usable experience."""
        total = sum(self.matches.values())
        return None if not total else 1 - self.matches["reflexion_explore"] / total
