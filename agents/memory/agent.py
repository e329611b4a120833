"""The Faust side of memory: memory writes in micro-batches → LanceDB → outcomes.

Writes are keyed by memory id (spread over every partition and worker) or by
scope (``publisher.memory_key``: a scope's writes in order on one partition, so
the de-duplication and conflict checks see every earlier write of the scope
whatever the number of workers). A batch is applied in event-time order. A
record holds one write or a JSON array of them (``remember_many``). Batches of
up to ``memory.batch_max_writes`` records or ``memory.batch_within_s`` go to
LanceDB at once, in a thread so the stream keeps flowing: through the checked
write path, or appended with the checks left to maintenance when
``memory.write_checks`` is ``deferred``. Outcomes (stored, duplicate,
stored_with_conflicts, already_stored, rejected) go to the memory-outcomes
topic, one record per JSON write; undecodable writes to the dead-letter topic.
The monitor's lessons come on their own topic to a second agent, ``store_lessons``,
the same way but in batches of up to ``memory.lessons_within_s`` (2 s): an agent
may await its own writes' outcomes, nobody awaits a lesson's.
Each batch's offsets are committed as soon as it is stored (its outcomes delivered
first), not at the next commit interval: a bulk load is committed when it is stored.

Index upkeep (building, folding new rows in, compaction) is the group leader's,
on a timer beside the writes (``memory.index.upkeep_interval_s``): one owner for
the table, and the stream keeps flowing while a vector index is retrained.

An Arrow record's outcomes go out together, one JSON array per scope, so a bulk
load costs one output record per input record rather than one per write.

A batch is decoded and applied by the capability's batch step
(:mod:`~loopwarden.agents.memory.step`, which the in-memory worker runs too); how —
at once, or write by write when it fails, each write that fails by itself
``rejected`` — is :class:`~loopwarden.agents.memory.batches.MemoryBatchWriter`'s,
tested without a broker; a transient failure (LanceDB or its disk unavailable)
pauses the stream and retries the batch through the runner, so an outage rejects
nothing and commits nothing past it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from loopwarden.agents.memory.api import register_memory_api
from loopwarden.agents.memory.maintenance import Maintenance, MaintenanceReport
from loopwarden.agents.memory.shared import shared_memory
from loopwarden.agents.memory.step import MemoryStep
from loopwarden.schemas.memory_outcomes import maintenance_report
from loopwarden.streams.runtime.app import LoopwardenApp
from loopwarden.streams.runtime.capability import Capability
from loopwarden.streams.runtime.capability_runner import run_capability
from loopwarden.streams.runtime.records import Record
from loopwarden.streams.runtime.resources import WorkerResources

log = logging.getLogger(__name__)


def write_handler(app: LoopwardenApp, step: MemoryStep) -> Any:
    """What both memory agents do with a batch of records: the capability's step
    (:mod:`~loopwarden.agents.memory.step`), each half in a thread so the stream keeps
    flowing; its dead letters and outcomes sent, its rows counted."""
    outputs = app.outputs

    async def handle(records: list[Record]) -> None:
        decoded = await asyncio.to_thread(step.decode, records)  # off the loop: fetches go on
        for letter in decoded.dead_letters:
            app.dead_letters.send(letter)
        done = await asyncio.to_thread(step.write, decoded)
        if done.written is None:
            return
        outputs.emit_all(done.outputs())
        app.metrics.memory_rows(done.rows_written())
        first, last = records[0].source, records[-1].source
        log.debug(
            "%d memory write(s) of %s[%d]@%d..%d applied: %s",
            len(done.written.every()),
            first.topic,
            first.partition,
            first.offset,
            last.offset,
            dict(done.written.statuses()),
        )

    return handle


def _batch_agent(app: LoopwardenApp, resources: WorkerResources, capability: Capability) -> Any:
    processing = capability.batches
    if processing is None:
        raise ValueError(f"{capability.agent} declares no batch step")
    step = processing.build(app.loopwarden, resources, app.otel_tracer)
    if not isinstance(step, MemoryStep):  # the agent runs its two halves apart
        raise TypeError(f"{capability.agent}'s batch step is a {type(step).__name__}")
    handler = write_handler(app, step)
    return run_capability(app, capability, handler, batches=processing.sizes(app.loopwarden))


def register_lessons(app: LoopwardenApp, resources: WorkerResources, capability: Capability) -> Any:
    """Declare the ``store_lessons`` agent: the monitor's lessons, batched by
    ``memory.lessons_within_s`` (clients' writes keep their own, shorter window)."""
    return _batch_agent(app, resources, capability)


def register_memory(app: LoopwardenApp, resources: WorkerResources, capability: Capability) -> Any:
    """Declare the ``store_memories`` agent and the leader's upkeep timers."""
    service = shared_memory(resources)
    cfg = app.loopwarden.memory
    outputs = app.outputs
    if app.loopwarden.web_port:
        register_memory_api(app, service)

    def maintain() -> MaintenanceReport:
        with service.lock:
            return Maintenance(service.table, cfg).run(time.time())

    if service.background_upkeep:
        interval = cfg.index.upkeep_interval_s

        @app.timer(interval, on_leader=True, name="keep_memory_indexes")
        async def keep_memory_indexes() -> None:
            # outside service.lock: writes go on while an index is built or folded in
            try:
                done = await asyncio.to_thread(service.table.indexes.keep)
            except Exception as exc:  # storage away: searches stay exact, next tick retries
                log.warning("memory index upkeep failed (%s); again in %g s", exc, interval)
                return
            if done["seconds"]:
                log.info("memory index upkeep: %s", done)

    if cfg.maintenance_interval_s:

        @app.timer(cfg.maintenance_interval_s, on_leader=True, name="maintain_memories")
        async def maintain_memories() -> None:
            try:  # an exception would end Faust's timer loop: no cycle would run again
                report = await asyncio.to_thread(maintain)
            except Exception as exc:
                log.warning("memory maintenance failed (%s); next cycle as planned", exc)
                return
            # an idle worker's log stays quiet: a cycle that changed nothing is debug
            level = logging.INFO if report.changed() else logging.DEBUG
            log.log(level, "memory maintenance: %s", report.line())
            outputs.emit("memory_outcomes", maintenance_report(report.to_json_dict(), time.time()))

    @app.task
    async def open_memory_store() -> None:
        # The embedder's weights and the LanceDB table load at start, not with the first
        # write: the first failed action of a run would otherwise wait ~1.5 s behind them.
        def open_store() -> None:
            with service.lock, service.boundary.calls("memory open"):
                _ = service.table  # the LanceDB tables, their indexes prewarmed
            service.embedder.embed(["loopwarden"])  # a model's first call is its slowest

        try:
            await asyncio.to_thread(open_store)
        except Exception as exc:  # storage away: the first write opens it (and says why)
            log.warning("memory store not opened at start (%s); the first write retries", exc)

    return _batch_agent(app, resources, capability)
