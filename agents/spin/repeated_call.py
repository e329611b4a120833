"""Same call, same result: the same (tool, arguments) returned the same result N times
in a row (``detection.repeat_result_count``, 4 as in OpenHands' stuck detector). The
strongest no-progress signal; an action whose result is unknown ends the run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loopwarden.agents.spin import pattern_texts as texts
from loopwarden.agents.spin.detector import Detector, Finding, Observation, register


@register
@dataclass(slots=True)
class RepeatedCall(Detector):
    """The current run of identical (call, result) pairs."""

    name = "repeated_call"
    uses_signature = True
    key: str | None = None
    count: int = 0
    ids: list[str] = field(default_factory=list)

    def observe(self, seen: Observation) -> Finding | None:
        if seen.same_step:
            return None  # a parallel call of the step just counted
        limit = seen.settings.repeat_result_count
        if seen.result_key is None:
            self.key, self.count, self.ids = None, 0, []
            return None
        key = f"{seen.signature}:{seen.result_key}"
        if key == self.key:
            self.count += 1
        else:
            self.key, self.count, self.ids = key, 1, []
        self.ids = [*self.ids, seen.event.event_id][-limit:]
        if self.count < limit:
            return None
        lang = seen.settings.language
        action_type = seen.event.payload.action_type
        reason = texts.repeated_call_reason(lang, self.count, action_type)
        suggestions = texts.NO_PROGRESS_SUGGESTIONS[lang]
        return self.pattern_finding(seen, reason, suggestions, self.ids, self.count)

    def snapshot(self) -> Any:
        return [self.key, self.count, self.ids]

    @classmethod
    def restore(cls, data: Any) -> RepeatedCall:
        key, count, ids = data
        return cls(key, int(count), list(ids))
