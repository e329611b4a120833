"""No progress in a window: each of the last ``detection.no_progress_calls`` calls repeats
a call (with the same result, when known) already seen among the last
``detection.no_progress_window``: the agent is going round, in whatever order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loopwarden.agents.spin import pattern_texts as texts
from loopwarden.agents.spin.detector import Detector, Finding, Observation, register


@register
@dataclass(slots=True)
class NoProgress(Detector):
    """The window of recent call keys and the current run of repeats."""

    name = "no_progress"
    uses_signature = True
    keys: list[str] = field(default_factory=list)
    run: int = 0
    ids: list[str] = field(default_factory=list)

    def observe(self, seen: Observation) -> Finding | None:
        if seen.same_step:
            return None  # a parallel call of the step just counted
        cfg = seen.settings
        key = seen.signature if seen.result_key is None else f"{seen.signature}:{seen.result_key}"
        repeat = key in self.keys
        self.keys = [*self.keys, key][-cfg.no_progress_window :]
        if not repeat:
            self.run, self.ids = 0, []
            return None
        self.run += 1
        self.ids = [*self.ids, seen.event.event_id][-cfg.no_progress_calls :]
        if self.run < cfg.no_progress_calls:
            return None
        lang = cfg.language
        reason = texts.no_progress_reason(lang, self.run, cfg.no_progress_window)
        suggestions = texts.NO_PROGRESS_SUGGESTIONS[lang]
        return self.pattern_finding(seen, reason, suggestions, self.ids, self.run)

    def snapshot(self) -> Any:
        return [self.keys, self.run, self.ids]

    @classmethod
    def restore(cls, data: Any) -> NoProgress:
        keys, run, ids = data
        return cls(list(keys), int(run), list(ids))
