"""The same tool refusing the agent's calls for the same reason.

A call published with ``rejected: true`` was refused by the tool or the harness before
it had any effect: a validation error, an HTTP 4xx, an edit a linter refused for a
syntax error, a reply in the wrong format. Nothing about it is transient, so there is
no guessing about retries. The reason is the line that says why
(:mod:`~loopwarden.agents.spin.failure_line`) with numbers and ids masked, so "found 3
actions" and then "found 2 actions" are one reason. Two patterns are a loop, per agent:

- the same attempt refused again: ``detection.rejection_repeats`` refusals of one tool
  for one reason among the agent's last ``detection.outcome_window`` calls, each call
  after the same target as the first (a short argument value in common that is not a
  path: the same booking with another price, the same record with another field);
- refusals running: ``detection.rejection_streak`` refusals of one tool for one reason
  among the agent's last ``detection.rejection_window`` calls, whatever was sent (an
  agent that keeps answering in a format its harness refuses).

Calls without the field are not counted here
(:mod:`~loopwarden.agents.spin.repeated_outcome` judges failures without it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loopwarden.agents.spin import rejection_texts as texts
from loopwarden.agents.spin.call_words import call_words, shares_target
from loopwarden.agents.spin.detector import (
    Detector,
    Finding,
    Observation,
    history_of,
    register,
    restored_histories,
)
from loopwarden.agents.spin.failure_line import failure_key, failure_line
from loopwarden.agents.spin.what_repeated import repeated, repetition_finding

TARGET_CHARS = 100
"""Longer argument values are texts (a script, a message), not targets."""
MAX_ACTORS = 8
"""Agents remembered per loop (the least recently active is forgotten first)."""

# one remembered call: event id, iteration, its tool, the refusal's key ("" when the
# call was not refused) and, refused, its words (call_words)
Item = list[Any]


def _same_attempt(words: list[Any], earlier: list[Any]) -> bool:
    """Two refused calls are one attempt: after the same target (a short argument value
    in common that is not a path: a record, a name; a whole script or message is not a
    target)."""
    return shares_target(words, earlier, most_chars=TARGET_CHARS, identifiers=False)


@register
@dataclass(slots=True)
class RepeatedRejection(Detector):
    """Per agent of the loop: its last calls, and which were refused for what reason."""

    name = "repeated_rejection"
    calls: dict[str, list[Item]] = field(default_factory=dict)

    def observe(self, seen: Observation) -> Finding | None:
        payload = seen.event.payload
        if seen.same_step or payload.turn == "message":
            return None
        cfg = seen.settings
        history = history_of(self.calls, payload.agent or "", MAX_ACTORS)
        key = (failure_key(payload) or "?") if payload.rejected else ""
        words = call_words(payload) if key else []
        refused = [
            item for item in history if key and item[2] == payload.action_type and item[3] == key
        ]
        attempts = [item for item in refused if _same_attempt(words, item[4])]
        running = [item for item in history[-(cfg.rejection_window - 1) :] if item in refused]
        history.append([seen.event.event_id, seen.iteration, payload.action_type, key, words])
        del history[: -(cfg.outcome_window - 1)]
        if len(attempts) + 1 >= cfg.rejection_repeats:
            same = attempts
        elif len(running) + 1 >= cfg.rejection_streak:
            same = running
        else:
            return None
        count = len(same) + 1
        lang = cfg.language
        suggestion = texts.rejection_suggestion(lang)
        facts = repeated("refused", payload, count, same[0][1], failure_line(payload))
        reason = texts.rejection_reason(lang, count, payload.action_type)
        return repetition_finding(self.kind, seen, same, facts, reason, suggestion)

    def snapshot(self) -> Any:
        return self.calls

    @classmethod
    def restore(cls, data: Any) -> RepeatedRejection:
        return cls(restored_histories(data))
