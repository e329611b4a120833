"""Rerun limits (seed 003 section 2)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RerunLimit:
    """The seed's ``enforce_rerun_limits`` result."""

    rerun_count: int
    max_reruns: int
    limit_reached: bool
    force_finalize: bool
    overridden: bool
    overridden_by: str | None


def enforce_rerun_limit(
    total_reruns: int, max_reruns: int, *, override: bool = False, override_by: str | None = None
) -> RerunLimit:
    """A family that has rerun ``max_reruns`` times must finalize, unless overridden."""
    reached = total_reruns >= max_reruns
    overridden = override and reached
    return RerunLimit(
        rerun_count=total_reruns,
        max_reruns=max_reruns,
        limit_reached=reached,
        force_finalize=reached and not override,
        overridden=overridden,
        overridden_by=override_by if overridden else None,
    )
