"""Failures of any kind: N failed actions in a row (``detection.failure_streak_count``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loopwarden.agents.spin import pattern_texts as texts
from loopwarden.agents.spin.detector import Detector, Finding, Observation, register


@register
@dataclass(slots=True)
class FailureStreak(Detector):
    """The current run of failed actions."""

    name = "failure_streak"
    count: int = 0
    ids: list[str] = field(default_factory=list)

    def observe(self, seen: Observation) -> Finding | None:
        if seen.same_step:
            return None  # a parallel call of the step just counted
        limit = seen.settings.failure_streak_count
        if not seen.failed:
            self.count, self.ids = 0, []
            return None
        self.count += 1
        self.ids = [*self.ids, seen.event.event_id][-limit:]
        if self.count < limit:
            return None
        lang = seen.settings.language
        reason = texts.failure_streak_reason(lang, self.count)
        suggestions = texts.FAILURE_SUGGESTIONS[lang]
        return self.pattern_finding(seen, reason, suggestions, self.ids, self.count)

    def snapshot(self) -> Any:
        return [self.count, self.ids]

    @classmethod
    def restore(cls, data: Any) -> FailureStreak:
        count, ids = data
        return cls(int(count), list(ids))
