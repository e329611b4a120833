"""The memory-outcomes records: what became of each memory write, built here only.

One record per JSON write (an Arrow record's outcomes travel as one JSON array per
scope). ``status`` is ``stored``, ``stored_with_conflicts``, ``duplicate``,
``already_stored`` (a replayed write, or an earlier row of the batch) or
``rejected`` (the write failed by itself; ``reason`` says why). The writer refines a
``stored`` outcome in place (status, ``duplicate_of``, ``conflicts``, ``trust``).
The leader's maintenance reports travel on the same topic, under scope ``*``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from loopwarden.schemas.ids import derived_id

MemoryStatus = Literal["stored", "stored_with_conflicts", "duplicate", "already_stored", "rejected"]
OUTCOME_TYPE = "memory_outcome"
ROWS_WRITTEN = frozenset({"stored", "stored_with_conflicts"})
"""Statuses that added a row (duplicates and replays did not)."""


def outcome_id_of(event_id: str) -> str:
    """The outcome's id: derived from its write's, so a replayed write answers alike."""
    return derived_id(OUTCOME_TYPE, event_id)


def stored_outcome(
    event_id: str,
    scope: str,
    memory_id: str,
    redacted: bool,
    *,
    outcome_id: str | None = None,
) -> dict[str, Any]:
    """A write's outcome as ``stored`` (``outcome_id`` when computed in bulk)."""
    return {
        "type": OUTCOME_TYPE,
        "outcome_id": outcome_id or outcome_id_of(event_id),
        "event_id": event_id,
        "memory_id": memory_id,
        "scope": scope,
        "status": "stored",
        "duplicate_of": None,
        "conflicts": [],
        "redacted": redacted,
    }


def rejected_outcome(event_id: str, scope: str, exc: BaseException) -> dict[str, Any]:
    """The outcome of a write that could not be applied (the reason is readable)."""
    return {
        "type": OUTCOME_TYPE,
        "outcome_id": outcome_id_of(event_id),
        "event_id": event_id,
        "scope": scope,
        "status": "rejected",
        "reason": f"{type(exc).__name__}: {exc}",
    }


def maintenance_report(counts: Mapping[str, int], at: float) -> dict[str, Any]:
    """A maintenance cycle's report (promoted, demoted, decayed … counts), scope ``*``."""
    return {"type": "maintenance_report", "scope": "*", "at": at, **counts}
