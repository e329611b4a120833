"""The same message, again and again: an agent that keeps saying what it already said.

Message turns (``turn: "message"``, text in ``result``, else ``action_name``) are
compared per speaker
(``agent``) and per kind of turn (``action_type``), so a multi-agent chat's
orchestrator and its workers are judged apart, and an orchestrator's requests apart
from its own notes. A turn repeats an earlier one when both name the same quoted
targets (``'Sylvia'`` and ``'Munich'`` are two requests), their first lines are
near-identical (``detection.message_similarity``) and what follows the first line
(a page seen, a result reported) is alike too (``detection.message_body_similarity``).
``detection.message_repeats`` such turns among the speaker's last
``detection.message_window`` is a loop: a request reworded over and over, a worker
reporting the same click on the same page, two agents passing the same
request and answer back and forth. A request that names only some of what the earlier
one named (the capitalised names of its first line: "check A, B and C", then
"continue with B and C") drops the items done: progress, not a repeat. Turns shorter
than ``detection.message_min_words`` words ("Next speaker WebSurfer", "OK") are
routine and not compared.
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
    restored_histories,
)
from loopwarden.agents.spin.normalise import (
    head_and_body,
    names,
    similarity,
    sketch,
    targets,
    word_count,
)
from loopwarden.agents.spin.what_repeated import repeated, repetition_finding

MAX_SPEAKERS = 16
"""(speaker, kind of turn) pairs remembered per loop."""

# one remembered turn: event id, iteration, targets, first-line sketch, body sketch, the
# names of its first line (absent in a state from before they were kept)
Turn = list[Any]


@register
@dataclass(slots=True)
class RepeatedMessage(Detector):
    """Per speaker and kind of turn: its last substantial messages."""

    name = "repeated_message"
    turns: dict[str, list[Turn]] = field(default_factory=dict)

    def observe(self, seen: Observation) -> Finding | None:
        payload = seen.event.payload
        text = payload.result or payload.action_name  # a message's text, else its name
        if payload.turn != "message" or not text:
            return None
        cfg = seen.settings
        if word_count(text) < cfg.message_min_words:
            return None
        key = f"{payload.agent or ''}\x1f{payload.action_type}"
        history = history_of(self.turns, key, MAX_SPEAKERS)
        head, body = head_and_body(text)
        if body and word_count(head) < cfg.message_min_words:
            head, body = body, ""  # a bare label ("Updated Ledger:") says nothing: judge the rest
        mine = [
            seen.event.event_id,
            seen.iteration,
            targets(text),
            sketch(head),
            sketch(body),
            names(text),
        ]
        same = [turn for turn in history[-(cfg.message_window - 1) :] if _alike(turn, mine, cfg)]
        history.append(mine)
        del history[: -cfg.message_window]
        count = len(same) + 1
        if count < cfg.message_repeats:
            return None
        return message_finding(self.kind, seen, same, head)

    def snapshot(self) -> Any:
        return self.turns

    @classmethod
    def restore(cls, data: Any) -> RepeatedMessage:
        return cls(restored_histories(data))


def message_finding(kind: str, seen: Observation, same: list[Turn], said: str) -> Finding:
    """The finding for a message said again: ``same`` are the earlier turns it repeats
    (event id and iteration first), ``said`` what to quote of it."""
    lang = seen.settings.language
    suggestion = texts.message_suggestion(lang)
    payload = seen.event.payload
    count = len(same) + 1
    facts = repeated("said", payload, count, same[0][1], said, call="")
    reason = texts.message_reason(lang, count, payload.agent or payload.action_type)
    return repetition_finding(kind, seen, same, facts, reason, suggestion)


def narrows(earlier: Turn, now: Turn) -> bool:
    """``now`` names some of what ``earlier`` named and nothing else: a request that
    drops the items done ("check A, B and C", then "continue with B and C") is
    progress, however alike the words."""
    if len(earlier) < 6 or len(now) < 6:
        return False
    return set(now[5]) < set(earlier[5])


def _alike(earlier: Turn, now: Turn, cfg: Any) -> bool:
    if earlier[2] != now[2] or narrows(earlier, now):
        return False
    if similarity(earlier[3], now[3]) < cfg.message_similarity:
        return False
    if earlier[4] and now[4]:
        return similarity(earlier[4], now[4]) >= cfg.message_body_similarity
    return True
