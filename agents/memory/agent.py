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
Each batch's offsets are committed as soon as it is stored (its outcomes delivered
first), not at the next commit interval: a bulk load is committed when it is stored.

Index upkeep (building, folding new rows in, compaction) is the group leader's,
on a timer beside the writes (``memory.index.upkeep_interval_s``): one owner for
the table, and the stream keeps flowing while a vector index is retrained.

An Arrow record's outcomes go out together, one JSON array per scope, so a bulk
load costs one output record per input record rather than one per write.

A batch that fails is applied write by write: a write that fails by itself
(a deterministic error) is ``rejected`` with the reason; a transient failure
(LanceDB or its disk unavailable) pauses the stream and retries the batch
through the runner, so an outage rejects nothing and commits nothing past it.
Writes are idempotent by event id, so a retried batch stores nothing twice.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from typing import Any

from opentelemetry.trace import SpanKind

from loopwarden.agents.capabilities import WorkerResources
from loopwarden.agents.memory.maintenance import Maintenance
from loopwarden.agents.memory.records import MemoryInputs, inputs_of
from loopwarden.errors import is_retriable
from loopwarden.schemas.ids import derived_id
from loopwarden.schemas.memory_columns import MemoryColumns
from loopwarden.streams.runtime.app import LoopwardenApp
from loopwarden.streams.runtime.capability import Capability
from loopwarden.streams.runtime.capability_runner import Batches, run_capability
from loopwarden.streams.runtime.runner import Record
from loopwarden.streams.runtime.telemetry.spans import child_span

log = logging.getLogger(__name__)
MEMORY_TABLE_NAME = "memories"
ROWS_WRITTEN = frozenset({"stored", "stored_with_conflicts"})
"""Outcome statuses that added a row (duplicates and replays did not)."""


Outcomes = tuple[list[dict[str, Any]], list[list[dict[str, Any]]]]
"""The outcomes of a batch: of its JSON writes, and of each Arrow record's rows."""


def rejected(event_id: str, scope: str, exc: BaseException) -> dict[str, Any]:
    """The outcome of a write that could not be applied (the reason is readable)."""
    return {
        "outcome_id": derived_id("memory_outcome", event_id),
        "event_id": event_id,
        "scope": scope,
        "status": "rejected",
        "reason": f"{type(exc).__name__}: {exc}",
    }


def _rows(batch: MemoryColumns) -> list[MemoryColumns]:
    return [
        MemoryColumns(batch.table.slice(i, 1), batch.had_secrets[i : i + 1])
        for i in range(len(batch))
    ]


def _by_scope(outcomes: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for outcome in outcomes:
        outcome.setdefault("type", "memory_outcome")
        groups.setdefault(outcome["scope"], []).append(outcome)
    return groups


def register_memory(app: LoopwardenApp, resources: WorkerResources, capability: Capability) -> Any:
    """Declare the ``store_memories`` agent and the leader's upkeep timers."""
    service = resources.memory
    cfg = app.loopwarden.memory
    outputs = app.outputs

    def apply(inputs: MemoryInputs) -> Outcomes:
        now = time.time()
        if cfg.write_checks == "deferred":
            with service.lock, service.boundary.calls("memory write"):
                importer = service.importer
                return importer.import_writes(inputs.writes, now), importer.import_columns(
                    inputs.columns, now
                )
        # checked one by one: every write of the batch in event-time order
        tagged = [(w, -1) for w in inputs.writes] + [
            (w, b) for b, batch in enumerate(inputs.columns) for w in batch.to_writes()
        ]
        tagged.sort(key=lambda item: item[0].occurred_at)
        writer = service.writer
        with service.lock, service.boundary.calls("memory write"):
            prepared = writer.prepare([w for w, _ in tagged])
            questions = writer.questions(prepared, now)
            if not questions:  # no model judge, or nothing to ask it: one pass
                outcomes = writer.apply(prepared, now, {})
        if questions and service.judge is not None:
            # the model is asked outside the lock: searches and maintenance go on meanwhile
            verdicts = service.judge.answer_all(questions)
            with service.lock, service.boundary.calls("memory write"):
                outcomes = writer.apply(prepared, now, verdicts)  # never asks the judge
        single: list[dict[str, Any]] = []
        per_batch: list[list[dict[str, Any]]] = [[] for _ in inputs.columns]
        for (_, b), outcome in zip(tagged, outcomes, strict=True):
            (single if b < 0 else per_batch[b]).append(outcome)
        return single, per_batch

    def maintain() -> dict[str, Any]:
        with service.lock:
            report = Maintenance(service.table, cfg).run(time.time())
        return {
            "type": "maintenance_report",
            "scope": "*",
            "at": time.time(),
            **report.to_json_dict(),
        }

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
            log.info("memory maintenance: %s", report)
            outputs.emit("memory_outcomes", report)

    def traced_apply(inputs: MemoryInputs) -> Outcomes:
        size = len(inputs.writes) + sum(len(batch) for batch in inputs.columns)
        with child_span(
            app.otel_tracer,
            f"add {MEMORY_TABLE_NAME}",
            SpanKind.CLIENT,
            **{
                "db.system.name": "lancedb",
                "db.operation.name": "add",
                "db.collection.name": MEMORY_TABLE_NAME,
                "db.operation.batch.size": size,
            },
        ):
            return apply(inputs)

    async def one_by_one(inputs: MemoryInputs) -> Outcomes:
        """Apply each write alone: a write that fails by itself is rejected."""
        single: list[dict[str, Any]] = []
        for write in inputs.writes:
            try:
                single.extend((await asyncio.to_thread(traced_apply, MemoryInputs([write])))[0])
            except Exception as one:
                if is_retriable(one):
                    raise
                single.append(rejected(write.event_id, write.payload.scope, one))
        per_batch = []
        for batch in inputs.columns:
            outcomes = []
            for row in _rows(batch):
                try:
                    applied = await asyncio.to_thread(traced_apply, MemoryInputs(columns=[row]))
                    outcomes.extend(applied[1][0])
                except Exception as one:
                    if is_retriable(one):
                        raise
                    event_id, scope = (
                        row.table.column(n)[0].as_py() for n in ("event_id", "scope")
                    )
                    outcomes.append(rejected(event_id, scope, one))
            per_batch.append(outcomes)
        return single, per_batch

    async def handle(records: list[Record]) -> None:
        inputs = await asyncio.to_thread(inputs_of, records)  # off the loop: fetches go on
        for letter in inputs.dead_letters:
            app.dead_letters.send(letter)
        if not inputs.writes and not inputs.columns:
            return
        try:
            single, per_batch = await asyncio.to_thread(traced_apply, inputs)
        except Exception as exc:
            if is_retriable(exc):
                raise  # storage away: the runner pauses and retries the whole batch
            log.warning("memory batch failed (%s); applying its writes one by one", exc)
            single, per_batch = await one_by_one(inputs)
        for outcome in single:
            outcome.setdefault("type", "memory_outcome")
            outputs.emit("memory_outcomes", outcome)
        for outcomes in per_batch:  # an Arrow record's outcomes: one array per scope
            for group in _by_scope(outcomes).values():
                outputs.emit("memory_outcomes", group)
        every = single + [o for outcomes in per_batch for o in outcomes]
        app.metrics.memory_rows(sum(o["status"] in ROWS_WRITTEN for o in every))
        first, last = records[0].source, records[-1].source
        log.debug(
            "%d memory write(s) of %s[%d]@%d..%d applied: %s",
            len(every),
            first.topic,
            first.partition,
            first.offset,
            last.offset,
            dict(Counter(o["status"] for o in every)),
        )

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

    batches = Batches(cfg.batch_max_writes, cfg.batch_within_s, cfg.batch_max_bytes, commit=True)
    return run_capability(app, capability, handle, batches=batches)
