"""Run the monitor over dataset runs exactly as ``loopwarden detect`` and the worker do."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from loopwarden.agents.monitor.records import RecordProcessor
from loopwarden.evaluation.dataset import Run
from loopwarden.schemas import codec
from loopwarden.schemas.dead_letter import SourcePosition
from loopwarden.settings import Settings

ENVELOPE = ("event_id", "loop_id", "occurred_at")


@dataclass(frozen=True, slots=True)
class Shown:
    """A warning as the agent sees it: where it was triggered, its kind and step."""

    position: int
    kind: str
    step: str | None
    warning: dict[str, Any]


def envelope(event: dict[str, Any], position: int) -> bytes:
    """The flat event as ``detect`` would wrap it (time: the line number when absent)."""
    env = {k: event[k] for k in ENVELOPE if k in event}
    env.setdefault("event_id", f"{event['loop_id']}#{position}")
    env.setdefault("occurred_at", float(position))
    env["payload"] = {k: v for k, v in event.items() if k not in ENVELOPE}
    return codec.dumps(env)


def warnings_of(
    settings: Settings,
    runs: Iterable[Run],
    progress: Callable[[Run], None] | None = None,
) -> dict[str, list[Shown]]:
    """Every warning the monitor shows, per run, positioned in the run's file."""
    processor = RecordProcessor.for_settings(settings)
    shown: dict[str, list[Shown]] = {}
    for run in runs:
        states: dict[str, Any] = {}
        positions: dict[str, int] = {}
        found: list[Shown] = []
        for position, event in enumerate(run.events):
            record = envelope(event, position)
            positions[event.get("event_id") or f"{run.loop_id}#{position}"] = position
            source = SourcePosition("dataset", 0, position)
            outcome = processor.process(record, None, source, states.get)
            states.update(outcome.states)
            for warning in outcome.warnings:
                where = positions.get(warning["trigger_event_id"], position)
                found.append(Shown(where, warning["kind"], warning.get("step"), warning))
        shown[run.loop_id] = found
        if progress is not None:
            progress(run)
    return shown
