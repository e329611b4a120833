"""Generic per-step features of a loop, for the calibrated gate, pure.

Every rule of :mod:`loopwarden.agents.spin` answers one question about one pattern.
The gate (:mod:`~loopwarden.agents.spin.gate`) decides whether what the rules propose
is a loop from facts that mean the same for any agent: how often this call, this
outcome and this failure line came back, whether anything new was seen since, whether
anything changed in between (an edit, the person's words), the period of a cycle of
outcomes, the streak of failures and refusals. :class:`StepHistory` keeps a bounded
history of the loop's recent steps as short keys and computes :data:`FEATURES` for
each step; it is kept in loop state like a detector's.

Keys: the call's signature (:mod:`~loopwarden.agents.spin.signature`), its outcome
(the result digest; the masked failure line for a failure without a result) and the
failure line with its volatile tokens masked (:func:`~.failure_line.failure_key`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from loopwarden.agents.spin.failure_line import failure_key, failure_line
from loopwarden.agents.spin.normalise import normalised, similarity, sketch
from loopwarden.schemas.events import ActionEvent

HISTORY = 48
"""Steps remembered: a cycle of up to ``HISTORY // 2`` steps is seen twice."""
MESSAGES = 3
"""Message turns whose sketches are remembered."""
SKETCH_KEEP = 32
RECENT = 8
"""Steps of the short-range shares."""
KEY = 10
"""Hex digits kept of each key."""

FEATURES: tuple[str, ...] = (
    "failed",
    "has_outcome",
    "message",
    "rejected",
    "call_seen",
    "outcome_seen",
    "pair_seen",
    "failure_line_seen",
    "failure_line_seen_same_tool",
    "failure_line_recent",
    "failure_line_words",
    "failure_streak",
    "rejected_streak",
    "steps_since_new_outcome",
    "new_outcome_share",
    "cycle_repeats",
    "cycle_period",
    "tool_streak",
    "tool_share",
    "message_similar",
    "changed_since_repeat",
    "new_between_repeats",
    "repeat_gap",
    "counterpart_since_repeat",
    "steps",
)
"""The features, in the order of the gate's weights (see ``docs/detection.md``)."""

MONOTONE: dict[str, int] = {
    **dict.fromkeys(
        (
            "call_seen",
            "outcome_seen",
            "pair_seen",
            "failure_line_seen",
            "failure_line_seen_same_tool",
            "failure_line_recent",
            "failure_line_words",
            "failure_streak",
            "rejected_streak",
            "steps_since_new_outcome",
            "cycle_repeats",
            "tool_streak",
            "message_similar",
        ),
        1,
    ),
    **dict.fromkeys(
        (
            "new_outcome_share",
            "new_between_repeats",
            "changed_since_repeat",
            "counterpart_since_repeat",
        ),
        -1,
    ),
}
"""The prior the gate is trained under, for agents in general: more repetition never
lowers the score (+1), more novelty or change never raises it (-1); the others are free."""

_IDX = {name: i for i, name in enumerate(FEATURES)}
_WORD = re.compile(r"[^\W\d_]{2,}")


SAYS_WORDS = 3
"""Distinct words a result needs to count as an outcome: an empty output in a
harness's wrapper (``<returncode>0</returncode><output></output>``) says nothing, and
two writes that both print nothing are not the same attempt."""


def says_something(text: str) -> bool:
    """The result has at least :data:`SAYS_WORDS` distinct words (volatile tokens masked);
    the words are read only until that many were found."""
    seen: set[str] = set()
    for word in _WORD.finditer(normalised(text)):
        seen.add(word.group())
        if len(seen) >= SAYS_WORDS:
            return True
    return False


def line_words(payload: Any) -> int:
    """Words (two letters or more) of a failure's reason line, volatile tokens masked:
    how much the line says (``exit code 1`` says little, ``gift card balance is not
    enough`` a lot)."""
    return len(_WORD.findall(normalised(failure_line(payload))))


def _log(count: float) -> float:
    return math.log1p(count)


@dataclass(slots=True)
class Step:
    """One remembered step, as short keys."""

    tool: str
    call: str
    outcome: str
    failure: str
    failed: bool
    new: bool
    changes: int
    """Edits and counterpart turns seen before it (a running count)."""
    heard: int
    """Counterpart turns seen before it."""

    def snapshot(self) -> list[Any]:
        flags = int(self.failed) | int(self.new) << 1
        return [self.tool, self.call, self.outcome, self.failure, flags, self.changes, self.heard]

    @classmethod
    def restore(cls, data: list[Any]) -> Step:
        tool, call, outcome, failure, flags, changes, heard = data
        return cls(tool, call, outcome, failure, bool(flags & 1), bool(flags & 2), changes, heard)


@dataclass(slots=True)
class StepHistory:
    """Per-loop: recent steps, message sketches and counts of what changed."""

    steps: list[Step] = field(default_factory=list)
    messages: list[list[int]] = field(default_factory=list)
    changes: int = 0
    heard: int = 0
    rejected_streak: int = 0
    count: int = 0

    def hear(self) -> None:
        """A counterpart's turn (the person, the calling agent): something new was said."""
        self.heard += 1
        self.changes += 1

    def observe(self, event: ActionEvent, signature: str, result_key: str | None) -> list[float]:
        """Record one of the agent's steps; its features (in :data:`FEATURES` order)."""
        payload = event.payload
        failed = payload.failed
        failure = failure_key(payload)[:KEY] if failed else ""
        said = payload.result is None or says_something(payload.result)
        outcome = ((result_key or "")[:KEY] if said else "") or failure
        call = signature[:KEY]
        tool = payload.action_type[:40]
        message = payload.turn == "message"
        x = [0.0] * len(FEATURES)
        x[_IDX["failed"]] = float(failed)
        x[_IDX["has_outcome"]] = float(bool(outcome))
        x[_IDX["message"]] = float(message)
        rejected = bool(payload.rejected)
        x[_IDX["rejected"]] = float(rejected)
        self.rejected_streak = self.rejected_streak + 1 if rejected else 0
        x[_IDX["rejected_streak"]] = _log(self.rejected_streak)

        steps = self.steps
        call_seen = outcome_seen = pair_seen = fail_seen = fail_tool = 0
        last_same: Step | None = None
        last_at = -1
        outcomes_before = set()
        for at, old in enumerate(steps):
            same_call = old.call == call
            same_outcome = bool(outcome) and old.outcome == outcome
            call_seen += same_call
            outcome_seen += same_outcome
            pair_seen += same_call and (same_outcome or not outcome)
            if failure and old.failure == failure:
                fail_seen += 1
                fail_tool += old.tool == tool
            if same_call or same_outcome:
                last_same, last_at = old, at
            outcomes_before.add(old.outcome)
        new = bool(outcome) and outcome not in outcomes_before
        x[_IDX["call_seen"]] = _log(call_seen)
        x[_IDX["outcome_seen"]] = _log(outcome_seen)
        x[_IDX["pair_seen"]] = _log(pair_seen)
        x[_IDX["failure_line_seen"]] = _log(fail_seen)
        x[_IDX["failure_line_seen_same_tool"]] = _log(fail_tool)
        if failure:
            recent_fail = sum(old.failure == failure for old in steps[-(RECENT - 1) :])
            x[_IDX["failure_line_recent"]] = _log(recent_fail)
            x[_IDX["failure_line_words"]] = _log(line_words(payload))
        if last_same is not None:
            x[_IDX["changed_since_repeat"]] = float(self.changes > last_same.changes)
            x[_IDX["counterpart_since_repeat"]] = float(self.heard > last_same.heard)
            between = steps[last_at + 1 :]
            x[_IDX["new_between_repeats"]] = (
                sum(s.new for s in between) / len(between) if between else 0.0
            )
            x[_IDX["repeat_gap"]] = _log(len(steps) - last_at)
        else:
            x[_IDX["new_between_repeats"]] = 1.0

        streak = 1 if failed else 0
        if failed:
            for old in reversed(steps):
                if not old.failed:
                    break
                streak += 1
        x[_IDX["failure_streak"]] = _log(streak)
        since_new = 0
        if not new:
            since_new = 1
            for old in reversed(steps):
                if old.new:
                    break
                since_new += 1
        x[_IDX["steps_since_new_outcome"]] = _log(since_new)
        recent = steps[-(RECENT - 1) :]
        x[_IDX["new_outcome_share"]] = (sum(s.new for s in recent) + new) / (len(recent) + 1)
        tool_streak = 1
        for old in reversed(steps):
            if old.tool != tool:
                break
            tool_streak += 1
        x[_IDX["tool_streak"]] = _log(tool_streak)
        x[_IDX["tool_share"]] = (sum(s.tool == tool for s in recent) + 1) / (len(recent) + 1)

        token = outcome or call
        repeats, period = _cycle([s.outcome or s.call for s in steps], token)
        x[_IDX["cycle_repeats"]] = _log(repeats)
        x[_IDX["cycle_period"]] = _log(period)

        if message:
            mine = sketch(payload.result or payload.action_name or "")[:SKETCH_KEEP]
            x[_IDX["message_similar"]] = max(
                (similarity(mine, old) for old in self.messages), default=0.0
            )
            self.messages.append(mine)
            del self.messages[:-MESSAGES]

        self.count += 1
        x[_IDX["steps"]] = _log(self.count)
        steps.append(Step(tool, call, outcome, failure, failed, new, self.changes, self.heard))
        del steps[:-HISTORY]
        if payload.edit is not None:
            self.changes += 1
        return x

    def snapshot(self) -> Any:
        return {
            "s": [step.snapshot() for step in self.steps],
            "m": self.messages,
            "c": [self.changes, self.heard, self.rejected_streak, self.count],
        }

    @classmethod
    def restore(cls, data: Any) -> StepHistory:
        changes, heard, rejected_streak, count = data["c"]
        return cls(
            [Step.restore(list(s)) for s in data["s"]],
            [list(m) for m in data["m"]],
            changes,
            heard,
            rejected_streak,
            count,
        )


def _cycle(tokens: list[str], token: str) -> tuple[float, int]:
    """(repeats, period) of the longest-repeating cycle ending with ``token``: for each
    period ``p``, the run of steps each equal to the one ``p`` before; repeats = run /
    ``p`` (1.0: the last ``p`` steps are the ``p`` before them again). (0, 0): none."""
    sequence = [*tokens, token]
    n = len(sequence)
    best, best_period = 0.0, 0
    for period in range(1, n // 2 + 1):
        run = 0
        i = n - 1
        while i - period >= 0 and sequence[i] == sequence[i - period]:
            run += 1
            i -= 1
        repeats = run / period
        if run >= period and repeats > best:
            best, best_period = repeats, period
    return best, best_period
