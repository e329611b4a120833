"""Multi-agent runs as families of loops, and the fleet role's warnings on them.

A multi-agent chat of the dataset (Who&When) is one file with every agent's turns.
:func:`family_events` makes it what a multi-agent system instrumented with
loopwarden publishes: the first speaker's turns are the root loop (the run's own
loop id), each other agent's turns a loop of its own (``<run>::<agent>``) whose
parent is the root. Positions stay those of the run's file, so the fleet's
warnings are scored against the run's annotations like the monitor's.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from loopwarden.agents.fleet.declaration import FAMILY_STATES
from loopwarden.agents.fleet.records import FleetProcessor
from loopwarden.agents.monitor.declaration import LOOP_STATES
from loopwarden.agents.monitor.records import RecordProcessor
from loopwarden.evaluation.dataset import Run
from loopwarden.evaluation.replay import Shown
from loopwarden.schemas import codec
from loopwarden.schemas.dead_letter import SourcePosition
from loopwarden.schemas.flat_events import envelope_from_json
from loopwarden.settings import Settings
from loopwarden.streams.runtime.state.offline import OfflineStates


def loop_of(run: Run, agent: str, root_agent: str) -> str:
    """The loop id of ``agent``'s turns in ``run``."""
    return run.loop_id if agent == root_agent else f"{run.loop_id}::{agent}"


def family_events(run: Run) -> list[dict[str, Any]]:
    """The run's events as validated envelopes of a family of loops, in file order."""
    root_agent = str(run.events[0].get("agent") or "") if run.events else ""
    out = []
    for position, event in enumerate(run.events):
        agent = str(event.get("agent") or root_agent)
        flat = dict(event, loop_id=loop_of(run, agent, root_agent))
        if agent != root_agent:
            flat["parent_loop_id"] = run.loop_id
        out.append(envelope_from_json(flat, position, id_prefix=run.loop_id))
    return out


def family_warnings(
    settings: Settings, runs: Iterable[Run]
) -> tuple[dict[str, list[Shown]], dict[str, list[Shown]], dict[str, list[dict[str, Any]]]]:
    """Per run: the fleet's per-loop warnings, the monitor's warnings when each agent is
    its own loop, and the fleet warnings (positions: the triggering event's)."""
    fleet_shown: dict[str, list[Shown]] = {}
    split_shown: dict[str, list[Shown]] = {}
    fleet_warnings: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        fleet = FleetProcessor.for_settings(settings)
        monitor = RecordProcessor.for_settings(settings)
        families = OfflineStates.for_settings(FAMILY_STATES, settings)
        loops = OfflineStates.for_settings(LOOP_STATES, settings)
        events = family_events(run)
        positions = {event["event_id"]: position for position, event in enumerate(events)}
        fleet_shown[run.loop_id], split_shown[run.loop_id] = [], []
        fleet_warnings[run.loop_id] = []
        for position, event in enumerate(events):
            value = codec.dumps(event)
            source = SourcePosition("dataset", 0, position)
            out = families.apply(fleet, value, None, source)
            for warning in out.warnings:
                where = positions.get(warning["trigger_event_id"], position)
                fleet_shown[run.loop_id].append(
                    Shown(where, warning["kind"], warning["step"], warning)
                )
            fleet_warnings[run.loop_id].extend(
                dict(w, position=positions.get(w["trigger_event_id"], position))
                for w in out.fleet_warnings
            )
            seen = loops.apply(monitor, value, None, source)
            for warning in seen.warnings:
                where = positions.get(warning["trigger_event_id"], position)
                split_shown[run.loop_id].append(
                    Shown(where, warning["kind"], warning.get("step"), warning)
                )
    return fleet_shown, split_shown, fleet_warnings
