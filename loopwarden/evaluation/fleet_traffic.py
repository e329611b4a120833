"""The fleet role on ordinary traffic: what it declares, and what it changes downstream.

The fleet's outage finding does two things: it tells loops a tool is down, and its
notices make every monitor stop counting the covered failures against the agents
(no detector, no reflection request). On traffic with no outage both are wrong, so
they are measured here offline, with the worker's own processors:
:func:`run_roles` applies a stream to the monitor alone, and to the fleet and the
monitor together (each notice reaches the monitor's outage board before the next
event, as soon as a worker could), and :func:`compare` says what differs.

:func:`random_failures` is the workload nobody should call an outage: many loops
whose calls fail at random, independently, with the tools' usual errors.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from loopwarden.agents.fleet import FleetProcessor
from loopwarden.agents.fleet.declaration import FAMILY_STATES
from loopwarden.agents.fleet.outage_board import OutageBoard
from loopwarden.agents.monitor.declaration import LOOP_STATES
from loopwarden.agents.monitor.records import RecordProcessor
from loopwarden.schemas.dead_letter import SourcePosition
from loopwarden.schemas.events import ActionEvent
from loopwarden.schemas.positions import default_partition
from loopwarden.settings import Settings
from loopwarden.streams.client.event_builder import encode_event, make_action_event
from loopwarden.streams.runtime.state.offline import OfflineStates

TOOLS = {
    "web_search": "429 Too Many Requests: slow down",
    "run_tests": "exit status 1: 3 tests failed",
    "read_file": "FileNotFoundError: no such file",
}
"""The workload's tools and the error each fails with (one error a tool, as a real
tool's routine failures often read alike)."""


def random_failures(
    loops: int = 30,
    events_per_s: float = 30.0,
    events: int = 3000,
    failure_rate: float = 0.3,
    seed: int = 0,
) -> list[ActionEvent]:
    """``events`` calls of ``loops`` loops at ``events_per_s`` in all, each failing with
    probability ``failure_rate`` independently of every other (no tool is down)."""
    rng = random.Random(seed)
    tools = sorted(TOOLS)
    out = []
    for n in range(events):
        loop = f"random-{rng.randrange(loops)}"
        tool = rng.choice(tools)
        at = 1.8e9 + n / events_per_s
        params = {"arg": f"{tool}-{rng.randrange(50)}"}
        if rng.random() < failure_rate:
            payload: dict[str, Any] = {"success": False, "error_message": TOOLS[tool]}
        else:
            payload = {"success": True, "result": f"{tool} ok {rng.randrange(10**6)}"}
        out.append(
            make_action_event(
                loop, tool, event_id=f"{loop}#{n}", occurred_at=at, params=params, **payload
            )
        )
    return out


@dataclass(slots=True)
class RoleOutputs:
    """What the roles sent for a stream, counted by kind."""

    warnings: Counter[str] = field(default_factory=Counter)
    """Per-loop warnings by origin and kind (``monitor:…``, ``fleet:…``)."""
    fleet_warnings: Counter[str] = field(default_factory=Counter)
    outages: list[tuple[str, str, int]] = field(default_factory=list)
    """(tool, error, loops) of every outage declared."""
    first_outage_at: dict[str, float] = field(default_factory=dict)
    """Tool → event time of its first outage's fleet warning."""
    requests: set[str] = field(default_factory=set)
    """The monitor's reflection (and other) requests, by id."""
    lessons: set[str] = field(default_factory=set)
    """The monitor's memory writes, by id."""
    lessons_during_outage: int = 0
    monitor_warnings: dict[str, str] = field(default_factory=dict)
    """The monitor's warnings: id → kind."""


def run_roles(
    settings: Settings, events: Iterable[ActionEvent], *, fleet: bool, partitions: int = 0
) -> RoleOutputs:
    """Apply ``events`` in order to the monitor, with the fleet role beside it or not;
    with ``partitions``, each event is read from its loop's partition (as a worker
    reading that many partitions would see it), else all from one."""
    board = OutageBoard()  # one board per worker, as the worker shares it
    monitor = RecordProcessor(settings.detection, settings.limits.max_event_bytes, outages=board)
    fleet_processor = FleetProcessor.for_settings(settings, board=board) if fleet else None
    loop_states = OfflineStates(LOOP_STATES)  # the monitor above keeps loops for the run
    fleet_states = OfflineStates.for_settings(FAMILY_STATES, settings)
    out = RoleOutputs()
    for offset, event in enumerate(events):
        data = encode_event(event, 0.0)
        lane = default_partition(event.loop_id.encode(), partitions) if partitions else 0
        source = SourcePosition("offline", lane, offset)
        if fleet_processor is not None:
            done = fleet_states.apply(fleet_processor, data, None, source)
            out.warnings.update(f"fleet:{w['kind']}" for w in done.warnings)
            out.fleet_warnings.update(w["kind"] for w in done.fleet_warnings)
            out.outages += [
                (w["tool"] or "", w["error"] or "", w["count"])
                for w in done.fleet_warnings
                if w["kind"] == "tool_outage"
            ]
            for w in done.fleet_warnings:
                if w["kind"] == "tool_outage":
                    out.first_outage_at.setdefault(w["tool"] or "", w["occurred_at"])
            for notice in done.tool_outages:
                board.note(notice)
        applied = loop_states.apply(monitor, data, event.loop_id.encode(), source)
        out.warnings.update(f"monitor:{w['kind']}" for w in applied.warnings)
        out.monitor_warnings.update((w["warning_id"], w["kind"]) for w in applied.warnings)
        out.requests.update(r["request_id"] for r in applied.requests)
        for write in applied.lessons:
            out.lessons.add(write["event_id"])
            out.lessons_during_outage += "during_tool_outage" in write["payload"]["tags"]
    return out


def compare(alone: RoleOutputs, with_fleet: RoleOutputs) -> dict[str, int]:
    """What the fleet changed in the monitor's outputs: counts lost and differing."""
    alone_kinds, fleet_kinds = alone.monitor_warnings, with_fleet.monitor_warnings
    return {
        "requests_lost": len(alone.requests - with_fleet.requests),
        "lessons_lost": len(alone.lessons - with_fleet.lessons),
        "warnings_lost": len(alone_kinds.keys() - fleet_kinds.keys()),
        "warnings_added": len(fleet_kinds.keys() - alone_kinds.keys()),
        "warnings_differing": sum(
            1
            for key in alone_kinds.keys() & fleet_kinds.keys()
            if alone_kinds[key] != fleet_kinds[key]
        ),
    }
