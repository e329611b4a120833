"""From actions records to open tasks, with no broker involved: experience's processor.

A task's start and end travel on the actions topic with the loop's steps.
:class:`TaskProcessor` is a keyed processor of the keyed-state kit
(:mod:`loopwarden.streams.runtime.keyed_runner`), keyed by loop id: a start opens a
task, an end closes it (its state ends: None), an action of a loop with an open task
adds a step to its capped log. Its :class:`TaskOutcome` also lists the starts and ends
in arrival order, for the LanceDB work the agent settles a batch with (match a start,
learn from an end). Records without a task event and without an open task's loop are
not decoded; invalid task events are dead letters (invalid actions are the monitor's to
dead-letter).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from loopwarden.agents.experience.steps import step_of
from loopwarden.agents.experience.tasks import OpenTask
from loopwarden.errors import EventError
from loopwarden.schemas.events import TASK_EVENT_TYPES, validate_action
from loopwarden.schemas.records import decode_record
from loopwarden.schemas.tasks import TaskEnd, TaskStart, validate_task_event
from loopwarden.settings import DetectionSettings, ExperienceSettings, Settings
from loopwarden.streams.runtime.state.protocol import KeyedOutcome, KeyedRecord
from loopwarden.streams.runtime.state.view import StateView

TaskLoader = Callable[[str], OpenTask | None]
"""A loop's open task as this record left it, else as stored, else None."""


@dataclass(slots=True)
class TaskOutcome(KeyedOutcome[OpenTask]):
    """What one record changed: loop id → its open task, or None once it ended; ``seen``
    holds the task events applied (an audit's triggers). No re-routes: a task is kept
    on the partition its events arrive on; no outputs of its own: advice comes from
    settling the batch against the store."""

    lifecycle: list[tuple[OpenTask, TaskStart | TaskEnd]] = field(default_factory=list)
    """Starts and ends in the order they arrived (a start after an end sees what it taught)."""


@dataclass
class TaskProcessor:
    """Applies actions records to open tasks, given the stored ones (module docstring)."""

    experience: ExperienceSettings
    detection: DetectionSettings
    any_open: Callable[[], bool] = lambda: True
    """Whether any task is open at all (the worker's table, written or pending): when
    none is, a record without a task event is not decoded."""

    @classmethod
    def for_settings(cls, settings: Settings, partitions: int = 0) -> TaskProcessor:
        """The processor a worker with ``settings`` runs (``partitions`` is the kit's
        factory signature: a task's records are never re-routed, they ride the actions
        topic keyed by loop id)."""
        return cls(settings.experience, settings.detection)

    def process(self, record: KeyedRecord, states: StateView[OpenTask]) -> TaskOutcome:
        """Apply one record: its task events and its open tasks' steps (a task does not
        start afresh when idle: the sweeps reclaim it, ``states.stored`` is read)."""
        value, key, source = record.value, record.key, record.source
        outcome = TaskOutcome(states=states.changed)
        if not value or (b"task_" not in value and not self.any_open()):
            return outcome
        task_of = states.stored

        def ours(obj: Any) -> Any:
            """A task event (validated), an open task's step (as it came), else None."""
            if not isinstance(obj, dict):
                return None
            if obj.get("type") in TASK_EVENT_TYPES:
                return validate_task_event(obj)
            loop_id = obj.get("loop_id")
            return obj if isinstance(loop_id, str) and task_of(loop_id) is not None else None

        # the actions topic is the monitor's: it dead-letters what is wrong with a record
        decoded = decode_record(value, key, source, 0, ours, owns_topic=False)
        outcome.dead_letters.extend(decoded.dead_letters)
        for _, item in decoded.events:
            if isinstance(item, dict):
                self._step(outcome, item, task_of)
            else:
                self._task_event(outcome, item, source.partition, task_of)
        return outcome

    @staticmethod
    def _task_event(
        outcome: TaskOutcome, event: TaskStart | TaskEnd, partition: int, task_of: TaskLoader
    ) -> None:
        current = task_of(event.loop_id)
        if isinstance(event, TaskStart):
            if current is not None and current.event_id == event.event_id:
                task = current  # redelivered: answered again (same advice id), steps kept
            else:
                task = OpenTask(
                    event.loop_id,
                    event.event_id,
                    event.payload.model_dump(mode="json"),
                    started_at=event.occurred_at,
                    last_seen=event.occurred_at,
                    partition=partition,
                )
            outcome.states[event.loop_id] = task
            outcome.lifecycle.append((task, event))
            outcome.seen.append((event.event_id, event.loop_id))
            outcome.events += 1
        elif current is not None:
            outcome.states[event.loop_id] = None
            outcome.lifecycle.append((current, event))
            outcome.seen.append((event.event_id, event.loop_id))
            outcome.events += 1

    def _step(self, outcome: TaskOutcome, obj: dict[str, Any], task_of: TaskLoader) -> None:
        try:
            event = validate_action(obj)
        except EventError:
            return  # the monitor dead-letters it
        task = task_of(event.loop_id)
        if task is None:
            return
        step = step_of(event, self.detection)
        task.add_step(event.event_id, step, event.occurred_at, self.experience.max_steps)
        outcome.states[event.loop_id] = task
        outcome.events += 1
