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
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from loopwarden.schemas.events import SCHEMA_VERSION
from loopwarden.schemas.ids import derived_id
from loopwarden.schemas.outputs import HEADER, MemoryOutcomeRecord

MemoryStatus = Literal["stored", "stored_with_conflicts", "duplicate", "already_stored", "rejected"]
OUTCOME_TYPE: Final = "memory_outcome"
ROWS_WRITTEN = frozenset({"stored", "stored_with_conflicts"})
"""Statuses that added a row (duplicates and replays did not)."""


class Conflict(BaseModel):
    """A stored memory the write contradicts."""

    memory_id: str
    confidence: float
    relation: str
    reason: str


class MemoryOutcome(BaseModel):
    """What became of one memory write (the memory-outcomes topic, keyed by scope)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    schema_version: int = SCHEMA_VERSION
    type: Literal["memory_outcome"] = "memory_outcome"
    outcome_id: str = Field(description="Derived from the write's event id.")
    event_id: str = Field(description="The write's event id.")
    scope: str
    status: MemoryStatus
    memory_id: str | None = Field(None, description="The row written (not when rejected).")
    duplicate_of: str | None = Field(None, description="A duplicate: the row it duplicates.")
    conflicts: list[Conflict] = Field(default_factory=list)
    redacted: bool = Field(False, description="Secrets were removed from the text.")
    trust: float | None = Field(None, description="The row's trust, when stored.")
    checks: Literal["deferred"] | None = Field(
        None, description="deferred: a bulk write, its duplicate and conflict checks come later."
    )
    reason: str | None = Field(None, description="Rejected: why.")


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
) -> MemoryOutcomeRecord:
    """A write's outcome as ``stored`` (``outcome_id`` when computed in bulk)."""
    record: MemoryOutcomeRecord = {
        **HEADER,
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
    return record


def rejected_outcome(event_id: str, scope: str, exc: BaseException) -> MemoryOutcomeRecord:
    """The outcome of a write that could not be applied (the reason is readable)."""
    record: MemoryOutcomeRecord = {
        **HEADER,
        "type": OUTCOME_TYPE,
        "outcome_id": outcome_id_of(event_id),
        "event_id": event_id,
        "scope": scope,
        "status": "rejected",
        "reason": f"{type(exc).__name__}: {exc}",
    }
    return record


class MaintenanceReport(BaseModel):
    """A memory maintenance cycle's report (its counts: promoted, demoted, decayed …),
    on the memory-outcomes topic under scope ``*``."""

    model_config = ConfigDict(frozen=True, extra="allow")
    __pydantic_extra__: dict[str, int] = Field(init=False)

    schema_version: int = SCHEMA_VERSION
    type: Literal["maintenance_report"] = "maintenance_report"
    scope: Literal["*"] = "*"
    at: float = Field(description="When the cycle ended (wall clock).")


def maintenance_report(counts: Mapping[str, int], at: float) -> dict[str, Any]:
    """A maintenance cycle's report (promoted, demoted, decayed … counts), scope ``*``."""
    # open-ended: its counts are whatever the cycle did (the model allows extra ints)
    return {**HEADER, "type": "maintenance_report", "scope": "*", "at": at, **counts}
