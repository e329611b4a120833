"""Two rules that only propose, for the gate: the same failure across varied calls,
and a cycle of outcomes of any period. Both read the step's generic features
(:mod:`.step_features`, present when the gate is on) and keep no state of their own.

- ``failure_line_repeat``: this failure's reason line (volatile tokens masked) came
  back at least twice before among the loop's recent steps, whatever the arguments
  (seven downloads with seven ids, all "no downloads left").
- ``outcome_cycle``: the recent outcomes repeat the ones before them in the same
  order, for any period up to half the history (a tour of twenty stops walked again).
"""

from __future__ import annotations

import math
from typing import Any

from loopwarden.agents.spin import pattern_texts as texts
from loopwarden.agents.spin.detector import Detector, Finding, Observation, register
from loopwarden.agents.spin.failure_line import failure_line
from loopwarden.agents.spin.step_features import FEATURES, line_words

_FAIL_SEEN = FEATURES.index("failure_line_seen")
_CYCLE_REPEATS = FEATURES.index("cycle_repeats")
_CYCLE_PERIOD = FEATURES.index("cycle_period")
FAILURE_PROPOSE_AT = 2
"""Earlier occurrences of the failure line that make a proposal (the third failure)."""
FAILURE_LINE_WORDS = 4
"""Words a failure line needs to be a reason (``exit code 1`` is not one)."""
CYCLE_PROPOSE_STEPS = 4
"""Steps of a repeating cycle that make a proposal (a period seen again in full)."""

_FAILURE_REASON = {
    "en": "The same failure came back {count} times across different calls of {tool}: {line}",
    "zh": "同样的失败在 {tool} 的不同调用中出现了 {count} 次：{line}",
}
_CYCLE_REASON = {
    "en": "The last {steps} steps repeat the {period} before them, with the same results",
    "zh": "最近 {steps} 步重复了之前的 {period} 步，结果相同",
}


def _count(value: float) -> int:
    return round(math.expm1(value))


class _Stateless(Detector):
    uses_features = True
    uses_signature = True

    def snapshot(self) -> Any:
        return None

    @classmethod
    def restore(cls, data: Any) -> Detector:
        return cls()


@register
class FailureLineRepeat(_Stateless):
    """The same failure reason, whatever the call."""

    name = "failure_line_repeat"

    def observe(self, seen: Observation) -> Finding | None:
        features = seen.features
        if features is None or not seen.failed:
            return None
        before = _count(features[_FAIL_SEEN])
        if before < FAILURE_PROPOSE_AT or line_words(seen.event.payload) < FAILURE_LINE_WORDS:
            return None
        lang = seen.settings.language
        payload = seen.event.payload
        line = failure_line(payload) or payload.error_message or ""
        reason = _FAILURE_REASON[lang].format(count=before + 1, tool=payload.action_type, line=line)
        suggestions = texts.FAILURE_SUGGESTIONS[lang]
        return self.pattern_finding(seen, reason, suggestions, (seen.event.event_id,), before + 1)


@register
class OutcomeCycle(_Stateless):
    """Outcomes repeating in the same order, any period."""

    name = "outcome_cycle"

    def observe(self, seen: Observation) -> Finding | None:
        features = seen.features
        if features is None:
            return None
        period = _count(features[_CYCLE_PERIOD])
        repeats = math.expm1(features[_CYCLE_REPEATS])
        steps = round(repeats * period)
        if period < 1 or steps < max(CYCLE_PROPOSE_STEPS, period):
            return None
        lang = seen.settings.language
        reason = _CYCLE_REASON[lang].format(steps=steps, period=period)
        suggestions = texts.NO_PROGRESS_SUGGESTIONS[lang]
        ids = [record["event_id"] for record in seen.window[-min(steps, len(seen.window)) :]]
        return self.pattern_finding(seen, reason, suggestions, ids, steps)
