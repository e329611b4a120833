"""Same call failing: the same (tool, arguments) failed N times in a row
(``detection.repeat_failure_count``, 3 as in OpenHands)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loopwarden.agents.spin import pattern_texts as texts
from loopwarden.agents.spin.detector import Detector, Finding, Observation, register


@register
@dataclass(slots=True)
class RepeatedFailure(Detector):
    """The current run of failures of one call."""

    name = "repeated_failure"
    uses_signature = True
    signature: str | None = None
    count: int = 0
    ids: list[str] = field(default_factory=list)

    def observe(self, seen: Observation) -> Finding | None:
        if seen.same_step:
            return None  # a parallel call of the step just counted
        limit = seen.settings.repeat_failure_count
        if not seen.failed:
            self.signature, self.count, self.ids = None, 0, []
            return None
        if seen.signature == self.signature:
            self.count += 1
        else:
            self.signature, self.count, self.ids = seen.signature, 1, []
        self.ids = [*self.ids, seen.event.event_id][-limit:]
        if self.count < limit:
            return None
        lang = seen.settings.language
        payload = seen.event.payload
        reason = texts.repeated_failure_reason(lang, self.count, payload.action_type)
        if payload.error_message:
            reason += f": {payload.error_message}"
        suggestions = texts.FAILURE_SUGGESTIONS[lang]
        return self.pattern_finding(seen, reason, suggestions, self.ids, self.count)

    def snapshot(self) -> Any:
        return [self.signature, self.count, self.ids]

    @classmethod
    def restore(cls, data: Any) -> RepeatedFailure:
        signature, count, ids = data
        return cls(signature, int(count), list(ids))
