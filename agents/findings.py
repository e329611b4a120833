"""Warnings, fleet warnings, tool outage notices and reflection requests are built here,
for every capability.

The records are JSON-ready dicts of the types in :mod:`loopwarden.schemas.outputs`
(:class:`WarningRecord`, :class:`FleetWarningRecord`, :class:`ToolOutageRecord`,
:class:`ReflectionRequestRecord`), shaped exactly as their models (the contract test
holds them to it); the hot path builds and encodes them without a validation round
trip. A shape is written once: every producer of a kind calls its function here.
"""

from __future__ import annotations

from collections.abc import Iterable

from loopwarden.schemas.ids import derived_id
from loopwarden.schemas.outputs import (
    HEADER,
    FleetWarningRecord,
    JsonObject,
    ReflectionRequestRecord,
    ToolOutageRecord,
    WarningRecord,
)


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
    stamp: JsonObject | None,
    suggestions: Iterable[str] = (),
    next_actions: Iterable[str] = (),
    consecutive_count: int | None = None,
    edit: JsonObject | None = None,
    step: str | None = None,
    repeated: JsonObject | None = None,
    gate: JsonObject | None = None,
) -> WarningRecord:
    """A warning for ``loop_id``; its id derives from kind, loop and triggering event."""
    record: WarningRecord = {
        **HEADER,
        "type": "warning",
        "warning_id": derived_id(kind, loop_id, trigger_event_id),
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
        "repeated": repeated,
        "gate": gate,
    }
    return record


def fleet_warning(
    *,
    kind: str,
    root_loop_id: str,
    trigger_loop_id: str,
    trigger_event_id: str,
    step: str,
    reason: str,
    suggestions: Iterable[str],
    agents: Iterable[str],
    loop_ids: Iterable[str],
    event_ids: Iterable[str],
    count: int,
    loops: int,
    steps: int,
    failures: int,
    occurred_at: float,
    stamp: JsonObject | None,
    tokens: int = 0,
    cost: float = 0.0,
    tool: str | None = None,
    error: str | None = None,
) -> FleetWarningRecord:
    """A fleet warning about the family of ``root_loop_id`` (a tool outage's: the tool's
    key, with ``tool`` and ``error``); its id derives from kind, root and triggering
    event. ``loops``, ``steps``, ``failures``, ``tokens`` and ``cost`` are the family's
    totals when the finding was made."""
    record: FleetWarningRecord = {
        **HEADER,
        "type": "fleet_warning",
        "warning_id": derived_id(kind, root_loop_id, trigger_event_id),
        "kind": kind,
        "root_loop_id": root_loop_id,
        "tool": tool,
        "error": error,
        "trigger_loop_id": trigger_loop_id,
        "trigger_event_id": trigger_event_id,
        "step": step,
        "reason": reason,
        "suggestions": list(suggestions),
        "agents": list(agents),
        "loop_ids": list(loop_ids),
        "event_ids": list(event_ids),
        "count": count,
        "totals": {
            "loops": loops,
            "steps": steps,
            "failures": failures,
            "tokens": tokens,
            "cost": round(cost, 6),
        },
        "occurred_at": occurred_at,
        "produced_by": stamp,
    }
    return record


def outage_notice(
    *, tool: str, error_digest: str, error: str, since: float, until: float, loops: int
) -> ToolOutageRecord:
    """A tool outage notice (the tool-outages topic, read by every monitor's
    :class:`~loopwarden.agents.fleet.outage_board.OutageBoard`): ``tool`` fails with the
    error of ``error_digest`` for ``loops`` runs, from ``since`` to ``until`` (event
    time; a later notice of the same outage extends it)."""
    record: ToolOutageRecord = {
        **HEADER,
        "type": "tool_outage",
        "tool": tool,
        "error_digest": error_digest,
        "error": error,
        "since": since,
        "until": until,
        "loops": loops,
    }
    return record


def request(
    *,
    kind: str,
    loop_id: str,
    trigger_event_id: str,
    level: str,
    occurred_at: float,
    stamp: JsonObject | None,
    reflection: JsonObject | None = None,
    recent_actions: list[JsonObject] | None = None,
    recent_reflections: list[JsonObject] | None = None,
    prompt: str | None = None,
    memory_query: str | None = None,
    memory_budget_bytes: int = 0,
) -> ReflectionRequestRecord:
    """A reflection request; the optional parts (reflection, prompt, …) as given."""
    record: ReflectionRequestRecord = {
        **HEADER,
        "type": "reflection_request",
        "request_id": derived_id(kind, loop_id, trigger_event_id),
        "kind": kind,
        "loop_id": loop_id,
        "level": level,
        "trigger_event_id": trigger_event_id,
        "reflection": reflection,
        "recent_actions": recent_actions if recent_actions is not None else [],
        "recent_reflections": recent_reflections if recent_reflections is not None else [],
        "prompt": prompt,
        "memory_query": memory_query,
        "memory_budget_bytes": memory_budget_bytes,
        "occurred_at": occurred_at,
        "produced_by": stamp,
        "trace_context": None,
    }
    return record
