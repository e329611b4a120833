"""The same thing said again in other words, with nothing done in between.

An agent that keeps talking without acting — a customer-service agent restating the
same refusal to a user who pushes, asking again for an identifier the user cannot
give — rewords each turn, so word overlap misses it. Message turns (``turn:
"message"``) of one speaker are compared by meaning
(:mod:`~loopwarden.agents.spin.meaning`): when a turn is at least
``detection.restate_similarity`` alike at least ``detection.restate_repeats - 1`` of
the speaker's last ``detection.restate_window - 1`` turns *since its last tool call*,
the speaker is going round in circles. Turns naming other quoted targets (``'Sylvia'``,
``'Munich'``) are other requests, however alike the rest. A tool call of the speaker starts a new streak
(it did something: what it says next may rest on it); turns shorter than
``detection.message_min_words`` words ("OK", "Thank you!") are not compared.

It works from the message text alone: no ``agent`` field is needed (a single agent's
turns are one speaker), and nothing about the user's side.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loopwarden.agents.spin import repeat_texts as texts
from loopwarden.agents.spin.detector import (
    Detector,
    Finding,
    Observation,
    history_of,
    register,
)
from loopwarden.agents.spin.meaning import cosine, meaning
from loopwarden.agents.spin.normalise import head_and_body, targets, word_count

MAX_SPEAKERS = 16
"""Speakers remembered per loop (the least recently active is forgotten first)."""

# one remembered turn: event id, iteration, quoted targets, meaning (signed bytes)
Turn = list[Any]


@register
@dataclass(slots=True)
class RestatedMessage(Detector):
    """Per speaker: its message turns since its last tool call."""

    name = "restated_message"
    turns: dict[str, list[Turn]] = field(default_factory=dict)

    def observe(self, seen: Observation) -> Finding | None:
        payload = seen.event.payload
        speaker = payload.agent or ""
        history = history_of(self.turns, speaker, MAX_SPEAKERS)
        if payload.turn != "message":
            history.clear()  # it acted: a new streak of talk starts after this
            return None
        cfg = seen.settings
        text = payload.result or payload.action_name or ""
        if word_count(text) < cfg.message_min_words:
            return None
        mine = [seen.event.event_id, seen.iteration, targets(text), list(meaning(text))]
        earlier = history[-(cfg.restate_window - 1) :]
        same = [
            turn
            for turn in earlier
            if turn[2] == mine[2] and cosine(turn[3], mine[3]) >= cfg.restate_similarity
        ]
        history.append(mine)
        del history[: -(cfg.restate_window - 1)]
        count = len(same) + 1
        if count < cfg.restate_repeats:
            return None
        lang = cfg.language
        suggestion = texts.message_suggestion(lang)
        head, _ = head_and_body(text)
        action_type = payload.action_type
        return Finding(
            kind=self.kind,
            reason=texts.message_reason(lang, count, action_type),
            suggestions=(suggestion,),
            event_ids=(*(turn[0] for turn in same), seen.event.event_id),
            timeline_message=texts.message_timeline(
                lang, action_type, count, same[0][1], texts.quote(head), suggestion
            ),
            consecutive_count=count,
        )

    def snapshot(self) -> Any:
        return self.turns

    @classmethod
    def restore(cls, data: Any) -> RestatedMessage:
        return cls({key: [list(turn) for turn in turns] for key, turns in data.items()})
