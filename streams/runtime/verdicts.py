"""The kit's verdicts: every action event an answering capability saw, answered.

A capability declared with ``answers=True`` (the monitor, the fleet) gets, for each
event its processor applied or skipped (``outcome.seen``), one
:class:`~loopwarden.schemas.verdicts.Verdict` naming how many of the record's
warnings are about that event for that loop: the guards end their bounded wait on it
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
    """One verdict per seen ``(event id, loop id)``, with the number of ``warnings``
    outputs whose loop and trigger are that event's (a warning about another loop — a
    family's root — is that loop's, not this event's)."""
    if not seen:
        return []
    warned: Counter[tuple[str, str]] = Counter()
    for name, value in outputs:
        if name == "warnings" and isinstance(value, dict):
            warned[(value["trigger_event_id"], value["loop_id"])] += 1
    answered: dict[tuple[str, str], None] = dict.fromkeys(seen)  # once each, in order
    return [
        verdict_record(loop_id, event_id, role, warned[(event_id, loop_id)], roles, at)
        for event_id, loop_id in answered
    ]
