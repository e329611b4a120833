"""Warnings and reflection requests are built here, for every capability.

The dicts are JSON-ready and shaped exactly as :class:`LoopWarning` and
:class:`ReflectionRequest` (a test holds them to it); the hot path builds and
encodes them without a validation round trip.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from loopwarden.schemas.events import SCHEMA_VERSION
from loopwarden.schemas.ids import derived_id

Output = dict[str, Any]


def warning(
    *,
    kind: str,
    loop_id: str,
    trigger_event_id: str,
    level: str,
    reason: str,
    event_ids: Iterable[str],
    action_type: str,
    iteration: int,
    timeline_message: str,
    occurred_at: float,
    stamp: Output | None,
    suggestions: Iterable[str] = (),
    next_actions: Iterable[str] = (),
    consecutive_count: int | None = None,
    edit: Output | None = None,
    step: str | None = None,
) -> Output:
    """A warning for ``loop_id``; its id derives from kind, loop and triggering event."""
    return {
        "warning_id": derived_id(kind, loop_id, trigger_event_id),
        "schema_version": SCHEMA_VERSION,
        "type": "warning",
        "kind": kind,
        "loop_id": loop_id,
        "level": level,
        "reason": reason,
        "suggestions": list(suggestions),
        "next_actions": list(next_actions),
        "event_ids": list(event_ids),
        "trigger_event_id": trigger_event_id,
        "action_type": action_type,
        "iteration": iteration,
        "consecutive_count": consecutive_count,
        "edit": edit,
        "timeline_message": timeline_message,
        "occurred_at": occurred_at,
        "produced_by": stamp,
        "trace_context": None,
        "step": step,
    }


def request(
    *,
    kind: str,
    loop_id: str,
    trigger_event_id: str,
    level: str,
    occurred_at: float,
    stamp: Output | None,
    **fields: Any,
) -> Output:
    """A reflection request; ``fields`` fill the optional parts (reflection, prompt, …)."""
    return {
        "request_id": derived_id(kind, loop_id, trigger_event_id),
        "schema_version": SCHEMA_VERSION,
        "type": "reflection_request",
        "kind": kind,
        "loop_id": loop_id,
        "level": level,
        "trigger_event_id": trigger_event_id,
        "reflection": None,
        "recent_actions": [],
        "recent_reflections": [],
        "prompt": None,
        "memory_query": None,
        "memory_budget_bytes": 0,
        "occurred_at": occurred_at,
        "produced_by": stamp,
        "trace_context": None,
        **fields,
    }
