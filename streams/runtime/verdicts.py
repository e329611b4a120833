"""The kit's verdicts: every action event an answering capability saw, answered.

A capability declared with ``answers=True`` (the monitor, the fleet) gets, for each
loop whose events its processor applied or skipped in a record (``outcome.seen``), one
:class:`~loopwarden.schemas.verdicts.Verdict` naming, per event, how many of the
record's warnings are about that event for that loop: the guards end their bounded wait on it
(see :mod:`loopwarden.schemas.verdicts`). Pure: the worker's driver emits what
:func:`verdicts_of` returns.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from loopwarden.schemas.outputs import VerdictRecord
from loopwarden.schemas.verdicts import verdict_record


def verdicts_of(
    seen: Sequence[tuple[str, str]],
    outputs: Iterable[tuple[str, Any]],
    role: str,
    roles: Sequence[str],
    at: float,
) -> list[VerdictRecord]:
    """One verdict per loop of the seen ``(event id, loop id)``, in the order the loops
    were first seen, with each event's number of ``warnings`` outputs whose loop and
    trigger are that event's (a warning about another loop — a family's root — is that
    loop's, not this event's)."""
    if not seen:
        return []
    warned: Counter[tuple[str, str]] = Counter()
    for name, value in outputs:
        if name == "warnings" and isinstance(value, dict):
            warned[(value["trigger_event_id"], value["loop_id"])] += 1
    by_loop: dict[str, dict[str, int]] = {}
    for event_id, loop_id in seen:
        answers = by_loop.get(loop_id)
        if answers is None:
            answers = by_loop[loop_id] = {}
        answers[event_id] = warned[(event_id, loop_id)]
    return [
        verdict_record(loop_id, role, answers, roles, at) for loop_id, answers in by_loop.items()
    ]
