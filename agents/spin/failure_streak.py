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
        payload = seen.event.payload
        reason = texts.failure_streak_reason(lang, self.count)
        suggestions = texts.FAILURE_SUGGESTIONS[lang]
        return Finding(
            kind=self.kind,
            reason=reason,
            suggestions=suggestions,
            event_ids=tuple(self.ids),
            timeline_message=texts.pattern_timeline(lang, payload.action_type, reason, suggestions),
            consecutive_count=self.count,
        )

    def snapshot(self) -> Any:
        return [self.count, self.ids]

    @classmethod
    def restore(cls, data: Any) -> FailureStreak:
        count, ids = data
        return cls(int(count), list(ids))
