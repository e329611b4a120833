"""The Faust side of experience replay: task events and steps → advice, learning, EMA.

The agent reads the actions topic beside the action monitor (one consumer, each
record handed to both; the offset is committed once both are done). A task's
start and end travel there too, keyed by loop id, so they arrive in order with
the loop's steps. Per batch (``experience.batch_within_s``):

1. a ``task_start`` opens the loop's task in the ``experience-tasks`` table
   (changelogged: a restart resumes it); actions of a loop with an open task add
   steps to its capped log (``experience.max_steps``); other actions cost one
   look-up (records without a task event or an open task's loop are not decoded);
2. in a thread: each new task is matched (seed 004 §3.3) and each ended task
   applied: a replay's outcome updates its experience's success rate (EMA), an
   exploration is learned (off the hot path, §4.2);
3. advice goes to the advice topic (keyed by loop id), ended tasks leave the table.

A LanceDB outage pauses the stream and retries the batch (nothing is committed
past it); the batch is applied again from the stored task states, and every
effect is idempotent (advice ids, experience ids and end events applied once).
Invalid task events go to the dead-letter topic; invalid actions are the
monitor's to dead-letter. The leader runs maintenance (generalisation, decay,
indexes) on a timer; open tasks idle past ``experience.task_ttl_s`` are dropped.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from loopwarden.agents.capabilities import WorkerResources
from loopwarden.agents.experience.learning import learnable
from loopwarden.agents.experience.metrics import ExperienceMetrics
from loopwarden.agents.experience.records import Batch, TaskTracker
from loopwarden.agents.experience.tasks import OpenTask
from loopwarden.schemas.tasks import TaskSpec, TaskStart
from loopwarden.schemas.trace_context import carried
from loopwarden.streams.runtime.app import LoopwardenApp
from loopwarden.streams.runtime.capability import Capability
from loopwarden.streams.runtime.capability_runner import Batches, run_capability
from loopwarden.streams.runtime.runner import Record
from loopwarden.streams.runtime.state.expiry import IdleLoopSweeper
from loopwarden.streams.runtime.state.sweeps import follow_assignment
from loopwarden.streams.runtime.table_store import TableStore
from loopwarden.streams.tools.topics import TASK_TABLE

log = logging.getLogger(__name__)
REPLAYS = frozenset({"direct_replay", "adaptive_replay"})
"""Routes that follow one experience: their outcome updates its success rate."""
BATCH_MAX_MESSAGES = 64


def register_experience(
    app: LoopwardenApp, resources: WorkerResources, capability: Capability
) -> Any:
    """Declare the open-task table and the ``replay_experience`` agent."""
    store = resources.experience
    settings = app.loopwarden
    cfg = settings.experience
    table = app.Table(
        TASK_TABLE,
        partitions=settings.topics.partitions,
        key_type=bytes,
        value_type=bytes,
        help="Open tasks: what they are, the advice they got, their steps so far.",
    )
    states = TableStore(table, app.sink)
    sweeper = IdleLoopSweeper(cfg.task_ttl_s, min(cfg.task_ttl_s, 60.0))
    follow_assignment(app, sweeper, settings.topics.actions)
    metrics = ExperienceMetrics(app.telemetry.meter)
    app.experience_metrics = metrics  # type: ignore[attr-defined]

    tracker = TaskTracker(cfg, settings.detection)

    def stored(loop_id: str) -> OpenTask | None:
        data = table.data.get(loop_id.encode())
        return OpenTask.restore(data) if data else None

    def is_open(loop_id: str) -> bool:
        return loop_id.encode() in table.data

    def apply(batch: Batch) -> list[dict[str, Any]]:
        """LanceDB work of a batch (in a thread), in arrival order: match each start,
        apply each end (a replay's outcome, or an exploration learned)."""
        now = time.time()
        advice = []
        with store.lock, store.boundary.calls("experience match/learn"):
            for task, event in batch.lifecycle:
                if isinstance(event, TaskStart):
                    result = store.match(TaskSpec(**task.spec), event.event_id, task.loop_id, now)
                    task.strategy = result.match.strategy
                    task.advised_ids = result.advice["experience_ids"]
                    metrics.matched(task.strategy, result.seconds)
                    advice.append(carried(result.advice, event.trace_context))
                    continue
                success = event.payload.success
                followed = task.advised_ids[0] if task.strategy in REPLAYS else None
                if followed and store.record_replay(followed, event.event_id, success, now):
                    metrics.replayed(success)
                if learnable(task):
                    end = event.payload.model_dump()
                    if store.learn([(task, end)], now):
                        metrics.stored("success" if success else "failure")
        return advice

    async def handle(records: list[Record]) -> None:
        batch = tracker.read(records, stored, lambda: bool(table.data), is_open)
        for letter in batch.letters:
            app.dead_letters.send(letter)
        if batch.lifecycle:
            for item in await asyncio.to_thread(apply, batch):
                app.outputs.emit("advice", item)
        for loop_id, (task, partition) in batch.tasks.items():
            if task is None:
                states.delete(loop_id.encode(), partition)
                sweeper.forget(loop_id.encode())
            else:
                states.put(loop_id.encode(), task.snapshot(), partition)
                sweeper.touch(loop_id.encode(), partition, task.last_seen)

    if cfg.maintenance_interval_s:

        @app.timer(cfg.maintenance_interval_s, on_leader=True, name="maintain_experiences")
        async def maintain_experiences() -> None:
            def run() -> dict[str, Any]:
                with store.lock:
                    report = store.maintain(time.time())
                    metrics.stats = store.stats()
                return report.__dict__

            try:  # an exception would end Faust's timer loop
                report = await asyncio.to_thread(run)
            except Exception as exc:
                log.warning("experience maintenance failed (%s); next cycle as planned", exc)
                return
            log.info(
                "experience maintenance: %s; %s; hit rate since start %s",
                report,
                metrics.stats,
                "n/a" if metrics.hit_rate is None else f"{metrics.hit_rate:.2f}",
            )

    def peek(key: bytes) -> tuple[int, float] | None:
        data = table.data.get(key)
        if not data:
            return None
        task = OpenTask.restore(data)
        return task.partition, task.last_seen

    @app.timer(sweeper.interval_s, name="expire_open_tasks")
    async def expire_open_tasks() -> None:
        now = time.time()  # wall clock: a task nobody writes to has no newer event time
        for partition in range(settings.topics.partitions):
            for key in sweeper.expired(partition, lambda: list(table.data.keys()), peek, now):
                states.delete(key, partition)
                log.info(
                    "open task of loop %s idle past experience.task_ttl_s: dropped", key.decode()
                )

    batches = Batches(BATCH_MAX_MESSAGES, cfg.batch_within_s)
    return run_capability(app, capability, handle, batches=batches)
