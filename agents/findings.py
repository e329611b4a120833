"""Warnings, fleet warnings, tool outage notices and reflection requests are built here,
for every capability.

The dicts are JSON-ready and shaped exactly as :class:`LoopWarning`,
:class:`~loopwarden.schemas.fleet.FleetWarning` and :class:`ReflectionRequest` (tests
hold them to it); the hot path builds and encodes them without a validation round
trip. A shape is written once: every producer of a kind calls its function here.
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
    repeated: Output | None = None,
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
        "repeated": repeated,
    }


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
    stamp: Output | None,
    tokens: int = 0,
    cost: float = 0.0,
    tool: str | None = None,
    error: str | None = None,
) -> Output:
    """A fleet warning about the family of ``root_loop_id`` (a tool outage's: the tool's
    key, with ``tool`` and ``error``); its id derives from kind, root and triggering
    event. ``loops``, ``steps``, ``failures``, ``tokens`` and ``cost`` are the family's
    totals when the finding was made."""
    return {
        "warning_id": derived_id(kind, root_loop_id, trigger_event_id),
        "schema_version": SCHEMA_VERSION,
        "type": "fleet_warning",
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


def outage_notice(
    *, tool: str, error_digest: str, error: str, since: float, until: float, loops: int
) -> Output:
    """A tool outage notice (the tool-outages topic, read by every monitor's
    :class:`~loopwarden.agents.fleet.outage_board.OutageBoard`): ``tool`` fails with the
    error of ``error_digest`` for ``loops`` runs, from ``since`` to ``until`` (event
    time; a later notice of the same outage extends it)."""
    return {
        "type": "tool_outage",
        "tool": tool,
        "error_digest": error_digest,
        "error": error,
        "since": since,
        "until": until,
        "loops": loops,
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
