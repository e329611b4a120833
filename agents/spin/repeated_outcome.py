"""Same call, same result, again and again — in a row or not.

Each tool call of an agent is remembered with its canonical signature and what it
returned; when the call made now was made with the same arguments at least
``detection.outcome_repeats - 1`` times among that agent's last
``detection.outcome_window`` calls, and returned the same result each time, the
agent is not learning anything new. Results are the same when their digests are
equal, or when their normalised texts are near-identical
(``detection.result_similarity``, see :mod:`~loopwarden.agents.spin.normalise`).

This covers the same call with the same result (OpenHands' first scenario, without
needing the repeats to be adjacent), the same failing call retried with the same
error — or a trivial variant of it: a failed call whose words are at least
``detection.retry_similarity`` alike an earlier one's, with the same error —,
re-reading the same region, and cycles of 2–5 calls whose results do not
change. A code edit (an event with ``edit``) clears the agent's memory: results
seen before it may be stale, and re-running a test after a real edit is progress.
Message turns are :mod:`~loopwarden.agents.spin.repeated_message`'s.
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
from loopwarden.agents.spin.normalise import identifiers, similarity, sketch

MAX_ACTORS = 8
"""Agents remembered per loop (the least recently active is forgotten first)."""

# one remembered call: event id, iteration, signature, result key, result sketch,
# call words and identifiers (failed calls only)
Item = list[Any]


def _call_words(seen: Observation) -> list[Any]:
    """A call's words (type, name, arguments) and the identifiers among them, for telling
    a trivial variant: the words may differ a little, the identifiers not at all."""
    payload = seen.event.payload
    text = f"{payload.action_type} {payload.action_name or ''} {payload.params}"
    return [sketch(text, mask=False), identifiers(text)]


@register
@dataclass(slots=True)
class RepeatedOutcome(Detector):
    """Per agent of the loop: its last calls with their results."""

    name = "repeated_outcome"
    uses_signature = True
    calls: dict[str, list[Item]] = field(default_factory=dict)

    def observe(self, seen: Observation) -> Finding | None:
        payload = seen.event.payload
        if seen.same_step or payload.turn == "message":
            return None
        cfg = seen.settings
        history = history_of(self.calls, payload.agent or "", MAX_ACTORS)
        if payload.edit is not None:
            history.clear()  # earlier results may be stale now
        if seen.result_key is None:
            history.append([seen.event.event_id, seen.iteration, seen.signature, None, [], []])
            del history[: -cfg.outcome_window]
            return None
        mine = sketch(payload.result) if payload.result else []
        call = _call_words(seen) if payload.failed and cfg.retry_similarity < 1 else []

        def repeats(item: Item) -> bool:
            if item[3] is None:
                return False
            if item[2] != seen.signature and not (
                call
                and item[5]
                and call[1] == item[5][1]
                and similarity(call[0], item[5][0]) >= cfg.retry_similarity
            ):
                return False
            if item[3] == seen.result_key:
                return True
            return bool(mine and item[4] and similarity(mine, item[4]) >= cfg.result_similarity)

        same = [item for item in history[-(cfg.outcome_window - 1) :] if repeats(item)]
        history.append(
            [seen.event.event_id, seen.iteration, seen.signature, seen.result_key, mine, call]
        )
        del history[: -cfg.outcome_window]
        count = len(same) + 1
        if count < cfg.outcome_repeats:
            return None
        lang = cfg.language
        action_type = payload.action_type
        suggestion = texts.outcome_suggestion(lang, payload.failed)
        result = texts.quote(payload.error_message if payload.failed else payload.result)
        return Finding(
            kind=self.kind,
            reason=texts.outcome_reason(lang, count, cfg.outcome_window, action_type),
            suggestions=(suggestion,),
            event_ids=(*(item[0] for item in same), seen.event.event_id),
            timeline_message=texts.outcome_timeline(
                lang,
                action_type,
                count,
                same[0][1],
                texts.quote(payload.action_name),
                result,
                suggestion,
            ),
            consecutive_count=count,
        )

    def snapshot(self) -> Any:
        return self.calls

    @classmethod
    def restore(cls, data: Any) -> RepeatedOutcome:
        return cls({actor: [list(item) for item in items] for actor, items in data.items()})
