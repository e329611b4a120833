"""The Faust side of experience replay: a processor plus a declaration, settled in batches.

The agent reads the actions topic beside the action monitor (one consumer, each
record handed to both; the offset is committed once both are done). A task's
start and end travel there too, keyed by loop id, so they arrive in order with
the loop's steps. The keyed-state kit
(:func:`~loopwarden.streams.runtime.keyed_runner.run_keyed`) runs
:class:`~loopwarden.agents.experience.records.TaskProcessor` over batches of records
(``experience.batch_within_s``) and keeps the open tasks in the ``experience-tasks``
table (changelogged, written at the end of each batch: a restart resumes them); it
reclaims tasks idle past ``experience.task_ttl_s`` in event time (and on quiet
partitions on the wall clock), like the monitor's loops. What is experience's own is
how a batch is **settled**, in a thread: each new task is matched (seed 004 §3.3) and
each ended task applied (a replay's outcome updates its experience's success rate
(EMA), an exploration is learned, off the hot path, §4.2); the advice goes to the
advice topic (keyed by loop id).

A LanceDB outage pauses the stream and retries the batch (nothing is committed
past it); the batch is applied again from the stored task states, and every
effect is idempotent (advice ids, experience ids and end events applied once).
Invalid task events go to the dead-letter topic; invalid actions are the
monitor's to dead-letter. The leader runs maintenance (generalisation, decay,
indexes) on a timer.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

from loopwarden.agents.experience.declaration import OPEN_TASKS
from loopwarden.agents.experience.learning import learnable
from loopwarden.agents.experience.metrics import ExperienceMetrics
from loopwarden.agents.experience.records import TaskOutcome, TaskProcessor
from loopwarden.agents.experience.store import ExperienceStore
from loopwarden.agents.memory.shared import shared_memory
from loopwarden.schemas.tasks import TaskSpec, TaskStart
from loopwarden.schemas.trace_context import carried
from loopwarden.streams.runtime.app import LoopwardenApp
from loopwarden.streams.runtime.capability import Batches, Capability
from loopwarden.streams.runtime.keyed_runner import run_keyed
from loopwarden.streams.runtime.resources import WorkerResources

log = logging.getLogger(__name__)
REPLAYS = frozenset({"direct_replay", "adaptive_replay"})
"""Routes that follow one experience: their outcome updates its success rate."""
BATCH_MAX_MESSAGES = 64


def settle_with(
    store: ExperienceStore, metrics: ExperienceMetrics | None = None
) -> Callable[[list[TaskOutcome]], Iterator[tuple[str, Any]]]:
    """The batch step: LanceDB work of a batch's outcomes, in arrival order — match each
    start, apply each end (a replay's outcome, or an exploration learned) — and the
    advice it gives, as named outputs."""

    def settle(outcomes: list[TaskOutcome]) -> Iterator[tuple[str, Any]]:
        now = time.time()
        advice: list[tuple[str, Any]] = []
        with store.lock, store.boundary.calls("experience match/learn"):
            for outcome in outcomes:
                for task, event in outcome.lifecycle:
                    if isinstance(event, TaskStart):
                        result = store.match(
                            TaskSpec(**task.spec), event.event_id, task.loop_id, now
                        )
                        task.strategy = result.match.strategy
                        task.advised_ids = result.advice["experience_ids"]
                        if metrics is not None:
                            metrics.matched(task.strategy, result.seconds)
                        advice.append(("advice", carried(result.advice, event.trace_context)))
                        continue
                    success = event.payload.success
                    followed = task.advised_ids[0] if task.strategy in REPLAYS else None
                    replayed = followed and store.record_replay(
                        followed, event.event_id, success, now
                    )
                    if replayed and metrics is not None:
                        metrics.replayed(success)
                    if learnable(task):
                        learned = store.learn([(task, event.payload.model_dump())], now)
                        if learned and metrics is not None:
                            metrics.stored("success" if success else "failure")
        return iter(advice)

    return settle


def experience_store(resources: WorkerResources) -> ExperienceStore:
    """The worker's experience store, sharing the memory service's embedder."""
    settings = resources.settings
    return resources.shared(
        ExperienceStore,
        lambda: ExperienceStore(
            settings.experience,
            settings.memory,
            shared_embedder=lambda: shared_memory(resources).embedder,
        ),
    )


def register_experience(
    app: LoopwardenApp, resources: WorkerResources, capability: Capability
) -> Any:
    """Declare the open-task table, the ``replay_experience`` agent and maintenance."""
    store = experience_store(resources)
    settings = app.loopwarden
    cfg = settings.experience
    metrics = ExperienceMetrics(app.telemetry.meter)
    processor = TaskProcessor.for_settings(settings)
    wiring = run_keyed(
        app,
        capability,
        OPEN_TASKS,
        processor,
        batches=Batches(BATCH_MAX_MESSAGES, cfg.batch_within_s),
        settle=settle_with(store, metrics),
    )
    processor.any_open = wiring.holds_any

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

    return wiring.agent
