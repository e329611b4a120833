"""Monologue: ``detection.monologue_count`` message turns in a row without a tool call, or
``detection.empty_response_count`` empty message turns in a row (a model that keeps
talking, or keeps answering nothing, instead of acting)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loopwarden.agents.spin import pattern_texts as texts
from loopwarden.agents.spin.detector import Detector, Finding, Observation, register


@register
@dataclass(slots=True)
class Monologue(Detector):
    """Runs of message turns and of empty ones."""

    name = "monologue"
    messages: int = 0
    empty: int = 0
    ids: list[str] = field(default_factory=list)

    def observe(self, seen: Observation) -> Finding | None:
        payload = seen.event.payload
        cfg = seen.settings
        if payload.turn != "message":
            self.messages, self.empty, self.ids = 0, 0, []
            return None
        blank = not (payload.result or "").strip() and payload.result_digest is None
        self.messages += 1
        self.empty = self.empty + 1 if blank else 0
        keep = max(cfg.monologue_count, cfg.empty_response_count)
        self.ids = [*self.ids, seen.event.event_id][-keep:]
        lang = cfg.language
        if self.empty >= cfg.empty_response_count:
            count, reason = self.empty, texts.empty_responses_reason(lang, self.empty)
        elif self.messages >= cfg.monologue_count:
            count, reason = self.messages, texts.monologue_reason(lang, self.messages)
        else:
            return None
        suggestions = texts.MONOLOGUE_SUGGESTIONS[lang]
        return self.pattern_finding(seen, reason, suggestions, self.ids[-count:], count)

    def snapshot(self) -> Any:
        return [self.messages, self.empty, self.ids]

    @classmethod
    def restore(cls, data: Any) -> Monologue:
        messages, empty, ids = data
        return cls(int(messages), int(empty), list(ids))
