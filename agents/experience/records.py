"""From actions records to open tasks, with no broker involved.

A task's start and end travel on the actions topic with the loop's steps.
:class:`TaskTracker` reads a batch of records into a :class:`Batch`: the open tasks
it changed (a start opens one, an end closes it, an action of a loop with an open
task adds a step to its capped log) and the task starts and ends in arrival order,
for the LanceDB work that follows. Records without a task event and without an open
task's loop are not decoded; invalid task events are dead letters (invalid actions
are the monitor's to dead-letter).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from loopwarden.agents.experience.steps import step_of
from loopwarden.agents.experience.tasks import OpenTask
from loopwarden.errors import EventError
from loopwarden.schemas.dead_letter import DeadLetter
from loopwarden.schemas.events import TASK_EVENT_TYPES, validate_action
from loopwarden.schemas.records import decode_record
from loopwarden.schemas.tasks import TaskEnd, TaskStart, validate_task_event
from loopwarden.settings import DetectionSettings, ExperienceSettings
from loopwarden.streams.runtime.runner import Record

TaskLoader = Callable[[str], OpenTask | None]
"""A loop's open task as stored, or None."""


@dataclass
class Batch:
    """What one batch of records changed."""

    tasks: dict[str, tuple[OpenTask | None, int]] = field(default_factory=dict)
    """loop id → (its open task, or None once ended; the partition)."""
    lifecycle: list[tuple[OpenTask, TaskStart | TaskEnd]] = field(default_factory=list)
    """Starts and ends in the order they arrived (a start after an end sees what it taught)."""
    letters: list[DeadLetter] = field(default_factory=list)


@dataclass
class TaskTracker:
    """Reads records into a :class:`Batch`, given the stored open tasks."""

    experience: ExperienceSettings
    detection: DetectionSettings

    def read(
        self,
        records: Iterable[Record],
        load: TaskLoader,
        any_open: Callable[[], bool],
        is_open: Callable[[str], bool],
    ) -> Batch:
        """The batch ``records`` make: ``load`` reads a stored task, ``any_open`` says
        whether any task is open at all, ``is_open`` whether a loop's is."""
        batch = Batch()
        for record in records:
            self._read(record, batch, load, any_open, is_open)
        return batch

    def _read(
        self,
        record: Record,
        batch: Batch,
        load: TaskLoader,
        any_open: Callable[[], bool],
        is_open: Callable[[str], bool],
    ) -> None:
        value = record.value
        # a task opened earlier in this batch is not stored yet, but its steps count
        if not value or (b"task_" not in value and not batch.tasks and not any_open()):
            return

        def ours(obj: Any) -> Any:
            """A task event (validated), an open task's step (as it came), else None."""
            if not isinstance(obj, dict):
                return None
            if obj.get("type") in TASK_EVENT_TYPES:
                return validate_task_event(obj)
            loop_id = obj.get("loop_id")
            if isinstance(loop_id, str) and (loop_id in batch.tasks or is_open(loop_id)):
                return obj
            return None

        # the actions topic is the monitor's: it dead-letters what is wrong with a record
        decoded = decode_record(value, record.key, record.source, 0, ours, owns_topic=False)
        batch.letters.extend(decoded.dead_letters)
        partition = record.source.partition
        for _, item in decoded.events:
            if isinstance(item, dict):
                self._step(batch, item, partition, load)
            else:
                self._task_event(batch, item, partition, load)

    @staticmethod
    def _task_of(batch: Batch, loop_id: str, load: TaskLoader) -> OpenTask | None:
        if loop_id in batch.tasks:
            return batch.tasks[loop_id][0]
        return load(loop_id)

    def _task_event(
        self, batch: Batch, event: TaskStart | TaskEnd, partition: int, load: TaskLoader
    ) -> None:
        current = self._task_of(batch, event.loop_id, load)
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
            batch.tasks[event.loop_id] = (task, partition)
            batch.lifecycle.append((task, event))
        elif current is not None:
            batch.tasks[event.loop_id] = (None, partition)
            batch.lifecycle.append((current, event))

    def _step(self, batch: Batch, obj: dict[str, Any], partition: int, load: TaskLoader) -> None:
        try:
            event = validate_action(obj)
        except EventError:
            return  # the monitor dead-letters it
        task = self._task_of(batch, event.loop_id, load)
        if task is None:
            return
        step = step_of(event, self.detection)
        task.add_step(event.event_id, step, event.occurred_at, self.experience.max_steps)
        batch.tasks[event.loop_id] = (task, partition)
