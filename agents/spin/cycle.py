"""Cycles: a block of 2 to ``detection.cycle_max_period`` calls repeated
``detection.cycle_repeats`` times at the tail (A,B,A,B,A,B). Calls are compared with
their results when known, so an edit → test → edit → test cycle that changes the
test's output is progress, not a spin. (A block of one call is ``repeated_call``.)"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loopwarden.agents.spin import pattern_texts as texts
from loopwarden.agents.spin.detector import Detector, Finding, Observation, register


def cycle_period(keys: list[str], max_period: int, repeats: int) -> int | None:
    """The shortest period k (2..max_period) whose block repeats ``repeats`` times at the
    end of ``keys`` and holds at least two different keys; None when there is none."""
    for period in range(2, max_period + 1):
        span = period * repeats
        if len(keys) < span:
            return None
        tail = keys[-span:]
        block = tail[:period]
        if len(set(block)) > 1 and all(tail[i] == block[i % period] for i in range(span)):
            return period
    return None


@register
@dataclass(slots=True)
class ActionCycle(Detector):
    """The last ``max_period × repeats`` calls (keys, action types and ids)."""

    name = "action_cycle"
    uses_signature = True
    keys: list[str] = field(default_factory=list)
    types: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)

    def observe(self, seen: Observation) -> Finding | None:
        if seen.same_step:
            return None  # a parallel call of the step just counted
        cfg = seen.settings
        keep = cfg.cycle_max_period * cfg.cycle_repeats
        key = seen.signature if seen.result_key is None else f"{seen.signature}:{seen.result_key}"
        self.keys = [*self.keys, key][-keep:]
        self.types = [*self.types, seen.event.payload.action_type][-keep:]
        self.ids = [*self.ids, seen.event.event_id][-keep:]
        period = cycle_period(self.keys, cfg.cycle_max_period, cfg.cycle_repeats)
        if period is None:
            return None
        lang = cfg.language
        span = period * cfg.cycle_repeats
        reason = texts.cycle_reason(lang, period, cfg.cycle_repeats, self.types[-period:])
        suggestions = texts.NO_PROGRESS_SUGGESTIONS[lang]
        return self.pattern_finding(seen, reason, suggestions, self.ids[-span:], cfg.cycle_repeats)

    def snapshot(self) -> Any:
        return [self.keys, self.types, self.ids]

    @classmethod
    def restore(cls, data: Any) -> ActionCycle:
        keys, types, ids = data
        return cls(list(keys), list(types), list(ids))
