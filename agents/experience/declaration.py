"""How experience keeps its open tasks: the declaration of the ``experience-tasks`` table."""

from __future__ import annotations

from loopwarden.agents.experience.tasks import OpenTask
from loopwarden.streams.runtime.state.protocol import KeyedDeclaration


def _peek_task(data: bytes) -> tuple[int, float]:
    task = OpenTask.restore(data)
    return task.partition, task.last_seen


OPEN_TASKS: KeyedDeclaration[OpenTask] = KeyedDeclaration(
    table="experience-tasks",
    help="Open tasks: what they are, the advice they got, their steps so far.",
    home_topic=lambda t: t.actions,
    reroute_topic=lambda t: t.actions_reroute,  # never used: tasks stay where they arrive
    restore=lambda key, data: OpenTask.restore(data),
    peek_expiry=_peek_task,
    seen_at=lambda task: task.last_seen,
    idle_ttl_s=lambda s: s.experience.task_ttl_s,
    ttl_setting="experience.task_ttl_s",
    noun="open task(s)",
    writes="every_record",  # at each batch's end: an outage reverts only the failed batch
    sweep_quiet_partitions=True,
)
"""The open tasks: one per loop id, on the partition its events arrive on; a task is
made by its start event, not afresh (no ``fresh``), and ends with its end event."""
