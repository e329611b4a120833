"""Same call, same result, again and again — in a row or not.

Each tool call of an agent is remembered with its canonical signature and what it
returned; when the call made now was made with the same arguments at least
``detection.outcome_repeats - 1`` times among that agent's last
``detection.outcome_window`` calls, and returned the same result each time, the
agent is not learning anything new. Results are the same when their digests are
equal, or when their normalised texts are near-identical
(``detection.result_similarity``, see :mod:`~loopwarden.agents.spin.normalise`).

It needs no result text: when an integration publishes only the call and whether it
worked, a failed call's outcome is its error (the same error again is the same
result), and a call that worked with no result published repeats only as the very
same call, ``detection.outcome_unknown_repeats`` times (more evidence is asked for,
as nothing shows that its result did not change).

This covers the same call with the same result (OpenHands' first scenario, without
needing the repeats to be adjacent), the same failing call retried with the same
error — or a trivial variant of it: a failed call whose words are at least
``detection.retry_similarity`` alike an earlier one's, with the same error; and once
the very same failing call comes again, a look-up of the same name elsewhere that
failed the same way (an argument value in common that is not a path) —,
re-reading the same region, and cycles of 2–5 calls whose results do not
change. A code edit (an event with ``edit``) clears the agent's memory: results
seen before it may be stale, and re-running a test after a real edit is progress —
but reads of *other* files are kept, repeating only with the very same result (an edit
of ``b.py`` does not change what ``a.py`` says, unless ``b.py`` is a script that
rewrites it), and the same file region read with another command — or through a
window that overlaps it by half — is the same call, with or without a result
published (:mod:`~loopwarden.agents.spin.read_region`: the event's ``read``, or a
plain shell read). Message turns are :mod:`~loopwarden.agents.spin.repeated_message`'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loopwarden.agents.spin import repeat_texts as texts
from loopwarden.agents.spin.call_words import call_similarity, call_words, shares_target
from loopwarden.agents.spin.detector import (
    Detector,
    Finding,
    Observation,
    history_of,
    register,
)
from loopwarden.agents.spin.normalise import normalised, similarity, sketch
from loopwarden.agents.spin.read_region import read_region, same_file, same_region
from loopwarden.schemas.events import result_digest

MAX_ACTORS = 8
"""Agents remembered per loop (the least recently active is forgotten first)."""

UNKNOWN = "?"
"""The outcome key of a call that worked and published no result."""

# one remembered call: event id, iteration, signature, outcome key, result sketch,
# call words, identifiers and argument values (failed calls only), the file region it
# read ([file, lines] or None; absent in a state from before regions were kept)
Item = list[Any]
READ = 6


def _read(item: Item) -> list[str] | None:
    return item[READ] if len(item) > READ else None


def _exact(item: Item) -> Item:
    """A read kept across an edit repeats only with the very same result: a script the
    edit wrote may have changed the file since, a little (its result sketch is dropped,
    so near-identical results no longer count)."""
    return [*item[:4], [], *item[5:]]


def _still_valid(item: Item, edited: str | None) -> bool:
    """A remembered call an edit of ``edited`` cannot have made stale: a read of
    another file (an edit that names no file may have changed anything)."""
    read = _read(item)
    return edited is not None and read is not None and not same_file(read[0], edited)


def outcome_key(seen: Observation) -> str | None:
    """What the call returned, as a key: the result's digest; with no result published,
    a failed call's error (``err:`` and its normalised text's digest) or
    :data:`UNKNOWN` when it worked; None when neither its result nor its success is
    known."""
    if seen.result_key is not None:
        return seen.result_key
    payload = seen.event.payload
    if payload.failed:
        return "err:" + result_digest(normalised(payload.error_message or ""))[:16]
    return None if payload.success is None else UNKNOWN


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
        if payload.edit is not None:  # earlier results may be stale now
            history[:] = [_exact(item) for item in history if _still_valid(item, payload.edit.file)]
        region = read_region(payload)
        read = None if region is None else list(region)
        key = outcome_key(seen)
        if key is None:
            history.append(
                [seen.event.event_id, seen.iteration, seen.signature, None, [], [], read]
            )
            del history[: -cfg.outcome_window]
            return None
        mine = sketch(payload.result) if payload.result else []
        call = call_words(seen.event.payload) if payload.failed and cfg.retry_similarity < 1 else []

        def repeats(item: Item) -> bool:
            if item[3] is None:
                return False
            earlier = _read(item)
            region = read is not None and earlier is not None and same_region(earlier, read)
            if (
                item[2] != seen.signature
                and not region
                and not (
                    call and item[5] and call_similarity(call, item[5]) >= cfg.retry_similarity
                )
            ):
                return False
            if item[3] == key:
                return key != UNKNOWN or item[2] == seen.signature or region
            return bool(mine and item[4] and similarity(mine, item[4]) >= cfg.result_similarity)

        window = history[-(cfg.outcome_window - 1) :]
        hits = [repeats(item) for item in window]
        same = [item for item, hit in zip(window, hits, strict=True) if hit]
        if call and any(item[2] == seen.signature and item[3] == key for item in same):
            # the very same failing call again: a look-up of the same name elsewhere that
            # failed the same way is the same attempt too
            same = [
                item
                for item, hit in zip(window, hits, strict=True)
                if hit or (item[3] == key and shares_target(call, item[5]))
            ]
        history.append([seen.event.event_id, seen.iteration, seen.signature, key, mine, call, read])
        del history[: -cfg.outcome_window]
        count = len(same) + 1
        needed = cfg.outcome_unknown_repeats if key == UNKNOWN else cfg.outcome_repeats
        if count < needed:
            return None
        lang = cfg.language
        action_type = payload.action_type
        unknown = key == UNKNOWN
        suggestion = texts.outcome_suggestion(lang, payload.failed, unknown)
        result = texts.quote(payload.error_message if payload.failed else payload.result)
        return Finding(
            kind=self.kind,
            reason=texts.outcome_reason(lang, count, cfg.outcome_window, action_type, unknown),
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
                unknown,
            ),
            consecutive_count=count,
        )

    def snapshot(self) -> Any:
        return self.calls

    @classmethod
    def restore(cls, data: Any) -> RepeatedOutcome:
        return cls({actor: [list(item) for item in items] for actor, items in data.items()})
