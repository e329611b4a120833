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
    restored_histories,
)
from loopwarden.agents.spin.failure_line import failure_key, failure_line
from loopwarden.agents.spin.normalise import normalised, similarity, sketch
from loopwarden.agents.spin.progress import figures_key, polls, tool_rule
from loopwarden.agents.spin.read_region import narrows, read_region, same_file, same_region
from loopwarden.agents.spin.what_repeated import repeated, repetition_finding, telling_line
from loopwarden.schemas.events import result_digest

MAX_ACTORS = 8
"""Agents remembered per loop (the least recently active is forgotten first)."""

UNKNOWN = "?"
"""The outcome key of a call that worked and published no result."""

# one remembered call: event id, iteration, signature, outcome key, result sketch,
# call words, identifiers and argument values (failed calls only), the file region it
# read ([file, lines] or None; absent in a state from before regions were kept)
Item = list[Any]
READ, FIGURES, FAILURE = 6, 7, 8
EDIT = "edit:"
"""A failed edit is remembered with its region as ``[edit:<file>, lines]``: it changed
nothing, and the next attempt at the same lines is the same attempt."""
MAX_POLLS = 16
"""Polling calls whose waits are remembered per loop."""


def _read(item: Item) -> list[str] | None:
    return item[READ] if len(item) > READ else None


def _field(item: Item, index: int) -> Any:
    """A field added to remembered calls later (None in a state from before it)."""
    return item[index] if len(item) > index else None


def _exact(item: Item) -> Item:
    """A read kept across an edit repeats only with the very same result: a script the
    edit wrote may have changed the file since, a little (its result sketch is dropped,
    so near-identical results no longer count)."""
    return [*item[:4], [], *item[5:]]


def _still_valid(item: Item, edited: str | None) -> bool:
    """A remembered call an edit of ``edited`` cannot have made stale: a read of
    another file (an edit that names no file may have changed anything)."""
    read = _read(item)
    return (
        edited is not None
        and read is not None
        and not same_file(read[0].removeprefix(EDIT), edited)
    )


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


@dataclass(frozen=True, slots=True)
class _Now:
    """The call being judged, as the remembered calls are compared with it."""

    signature: str
    key: str
    sketch: list[int]
    words: list[Any]
    read: list[str] | None
    figures: str | None
    failure: str
    compare_figures: bool


def _same_way(item: Item, now: _Now, cfg: Any) -> bool:
    """The same attempt, varied, failing the same way: the same masked reason (the
    results may differ elsewhere) from another call at the same target — the same
    region, or alike words. (The very same call whose output changed around the same
    error is not counted: something it depends on changed.)"""
    if not now.failure or _field(item, FAILURE) != now.failure or item[2] == now.signature:
        return False
    earlier = _read(item)
    if now.read is not None and earlier is not None and same_region(earlier, now.read):
        return True
    if not now.words or not item[5]:
        return False
    return call_similarity(now.words, item[5]) >= cfg.retry_similarity


def _peering(window: list[Item], read: list[str] | None) -> int:
    """How many of the last calls are reads of the file ``read`` reads, in a row: an
    agent peering at one spot, with nothing done in between."""
    if read is None or _edits(read):
        return 0
    count = 0
    for item in reversed(window):
        earlier = _read(item)
        if earlier is None or _edits(earlier) or not same_file(earlier[0], read[0]):
            break
        count += 1
    return count


def _repeats(item: Item, now: _Now, cfg: Any, peering: bool = False) -> bool:
    """``item`` is the call ``now`` made again with the same outcome (module docstring);
    ``peering``: ``item`` is one of the reads of this file just before it."""
    if item[3] is None:
        return False
    earlier = _read(item)
    region = now.read is not None and earlier is not None and same_region(earlier, now.read)
    if peering and region and earlier and now.read and not narrows(earlier, now.read):
        return True  # the same spot again, through a shifted window: whatever it showed
    if _same_way(item, now, cfg):
        return True
    if (
        item[2] != now.signature
        and not region
        and not (
            now.words and item[5] and call_similarity(now.words, item[5]) >= cfg.retry_similarity
        )
    ):
        return False
    if item[3] == now.key:
        return now.key != UNKNOWN or item[2] == now.signature or region
    if not (now.sketch and item[4] and similarity(now.sketch, item[4]) >= cfg.result_similarity):
        return False
    figures = _field(item, FIGURES)
    return not (now.compare_figures and now.figures and figures and figures != now.figures)


def _edits(read: list[str] | None) -> bool:
    return read is not None and read[0].startswith(EDIT)


@register
@dataclass(slots=True)
class RepeatedOutcome(Detector):
    """Per agent of the loop: its last calls with their results; per polling call, how
    long its result has stood still."""

    name = "repeated_outcome"
    uses_signature = True
    calls: dict[str, list[Item]] = field(default_factory=dict)
    polls: dict[str, list[int]] = field(default_factory=dict)
    """Per polling signature: [unchanged results now, the longest run that changed]."""

    def observe(self, seen: Observation) -> Finding | None:
        payload = seen.event.payload
        if seen.same_step or payload.turn == "message":
            return None
        cfg = seen.settings
        rule = tool_rule(payload, cfg.tools) if cfg.tools else "numbers"
        if rule == "exempt":
            return None
        history = history_of(self.calls, payload.agent or "", MAX_ACTORS)
        edit = payload.edit
        if edit is not None and not payload.failed:  # earlier results may be stale now
            history[:] = [_exact(item) for item in history if _still_valid(item, edit.file)]
        region = read_region(payload)
        read = None if region is None else list(region)
        if read is None and edit is not None and payload.failed and edit.file:
            read = [EDIT + edit.file, f"{edit.start_line}-{edit.end_line}"]
        key = outcome_key(seen)
        if key is None:
            history.append(
                [seen.event.event_id, seen.iteration, seen.signature, None, [], [], read]
            )
            del history[: -cfg.outcome_window]
            return None
        failed = payload.failed
        now = _Now(
            signature=seen.signature,
            key=key,
            sketch=sketch(payload.result) if payload.result else [],
            words=call_words(payload) if failed and cfg.retry_similarity < 1 else [],
            read=read,
            figures=figures_key(payload.result),
            failure=failure_key(payload) if failed else "",
            compare_figures=rule != "masked",
        )
        window = history[-(cfg.outcome_window - 1) :]
        near = len(window) - _peering(window, read)
        hits = [_repeats(item, now, cfg, at >= near) for at, item in enumerate(window)]
        same = [item for item, hit in zip(window, hits, strict=True) if hit]
        if now.words and any(item[2] == now.signature and item[3] == key for item in same):
            # the very same failing call again: a look-up of the same name elsewhere that
            # failed the same way is the same attempt too
            same = [
                item
                for item, hit in zip(window, hits, strict=True)
                if hit or (item[3] == key and shares_target(now.words, item[5]))
            ]
        history.append(
            [
                seen.event.event_id,
                seen.iteration,
                seen.signature,
                key,
                now.sketch,
                now.words,
                read,
                now.figures,
                now.failure,
            ]
        )
        del history[: -cfg.outcome_window]
        count = len(same) + 1
        needed = cfg.outcome_unknown_repeats if key == UNKNOWN else cfg.outcome_repeats
        if polls(payload, rule):
            needed = max(needed, self._waited(seen.signature, bool(same), cfg.poll_repeats))
        if count < needed:
            return None
        return self._finding(seen, same, count, key == UNKNOWN)

    def _waited(self, signature: str, unchanged: bool, floor: int) -> int:
        """How many unchanged results a polling call needs: ``poll_repeats``, and never
        fewer than twice the longest wait this poll saw end in a change."""
        current, longest = self.polls.pop(signature, [0, 0])
        if not unchanged and current:
            longest = max(longest, current)
        current = current + 1 if unchanged else 1
        self.polls[signature] = [current, longest]
        while len(self.polls) > MAX_POLLS:
            del self.polls[next(iter(self.polls))]
        return max(floor, 2 * longest + 1)

    def _finding(self, seen: Observation, same: list[Item], count: int, unknown: bool) -> Finding:
        payload = seen.event.payload
        cfg = seen.settings
        lang = cfg.language
        action_type = payload.action_type
        suggestion = texts.outcome_suggestion(lang, payload.failed, unknown)
        how = "very_same_call" if unknown else "same_failure" if payload.failed else "same_result"
        line = failure_line(payload) if payload.failed else telling_line(payload.result)
        facts = repeated(how, payload, count, same[0][1], "" if unknown else line)
        reason = texts.outcome_reason(lang, count, cfg.outcome_window, action_type, unknown)
        return repetition_finding(self.kind, seen, same, facts, reason, suggestion)

    def snapshot(self) -> Any:
        return [self.calls, self.polls] if self.polls else self.calls

    @classmethod
    def restore(cls, data: Any) -> RepeatedOutcome:
        calls, polls = (data, {}) if isinstance(data, dict) else data
        return cls(
            restored_histories(calls),
            {signature: list(wait) for signature, wait in polls.items()},
        )
