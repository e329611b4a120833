"""Run the monitor over dataset runs exactly as ``loopwarden detect`` and the worker do."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from loopwarden.agents.monitor.declaration import LOOP_STATES
from loopwarden.agents.monitor.records import RecordProcessor
from loopwarden.evaluation.dataset import Run
from loopwarden.schemas import codec
from loopwarden.schemas.dead_letter import SourcePosition
from loopwarden.schemas.flat_events import envelope_from_json
from loopwarden.settings import Settings
from loopwarden.streams.runtime.state.offline import OfflineStates


@dataclass(frozen=True, slots=True)
class Shown:
    """A warning as the agent sees it: where it was triggered, its kind and step."""

    position: int
    kind: str
    step: str | None
    warning: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Scored:
    """A step the gate scored: its line in the run's file, its position, the model input."""

    line: int
    position: int
    x: list[float]


def warnings_of(
    settings: Settings,
    runs: Iterable[Run],
    progress: Callable[[Run], None] | None = None,
    tap: dict[str, list[Scored]] | None = None,
) -> dict[str, list[Shown]]:
    """Every warning the monitor shows, per run, positioned in the run's file. With
    ``tap``, every step the gate scores is added to it, per run (for training)."""
    processor = RecordProcessor.for_settings(settings)
    gate_tap: list[tuple[str, list[float]]] | None = None
    gating = processor.monitor.gating
    if tap is not None and gating is not None:
        gate_tap = gating.tap = []
    shown: dict[str, list[Shown]] = {}
    for run in runs:
        states = OfflineStates.for_settings(LOOP_STATES, settings)
        positions: dict[str, int] = {}
        found: list[Shown] = []
        where_in_run = run.positions
        for line, event in enumerate(run.events):
            position = where_in_run[line]
            # the very envelope `detect` builds (time: the line number when absent)
            envelope = envelope_from_json(dict(event), line, id_prefix=run.loop_id)
            positions[envelope["event_id"]] = position
            source = SourcePosition("dataset", 0, line)
            outcome = states.apply(processor, codec.dumps(envelope), None, source)
            if gate_tap:
                scored = tap.setdefault(run.loop_id, [])  # type: ignore[union-attr]
                scored.extend(Scored(line, position, x) for _id, x in gate_tap)
                gate_tap.clear()
            for warning in outcome.warnings:
                where = positions.get(warning["trigger_event_id"], position)
                found.append(Shown(where, warning["kind"], warning.get("step"), warning))
        shown[run.loop_id] = found
        if progress is not None:
            progress(run)
    return shown
