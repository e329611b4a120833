"""A batch of memory writes applied to the store, and its outcomes — no broker involved.

:class:`MemoryBatchWriter` is what the memory agent runs in a thread for each batch
(:mod:`loopwarden.agents.memory.agent`): the batch's writes go to LanceDB at once,
through the checked write path (every write of the batch in event-time order; a
model judge, when there is one, is asked outside the storage lock) or appended with
the checks left to maintenance (``memory.write_checks = deferred``). A batch that
fails by a deterministic error is applied again write by write, and a write that
fails by itself is ``rejected`` with the reason; a transient failure (LanceDB or its
disk away) is raised, for the runner to pause and retry the whole batch. Writes are
idempotent by event id, so a retried batch stores nothing twice.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from loopwarden.agents.memory.records import MemoryInputs
from loopwarden.errors import is_retriable
from loopwarden.schemas.memory_columns import MemoryColumns
from loopwarden.schemas.memory_outcomes import ROWS_WRITTEN, rejected_outcome
from loopwarden.schemas.outputs import MemoryOutcomeRecord

if TYPE_CHECKING:
    from loopwarden.agents.memory.service import MemoryService

log = logging.getLogger(__name__)
Outcome = MemoryOutcomeRecord


@dataclass(slots=True)
class BatchOutcomes:
    """What became of a batch's writes."""

    writes: list[Outcome] = field(default_factory=list)
    """One per JSON write, in the order applied."""
    columns: list[list[Outcome]] = field(default_factory=list)
    """One list per Arrow record, one outcome per row."""

    def outputs(self) -> Iterator[tuple[str, Any]]:
        """The named outputs: each JSON write's outcome, and an Arrow record's outcomes
        as one array per scope (a bulk load costs a record per record, not per row)."""
        for outcome in self.writes:
            yield "memory_outcomes", outcome
        for outcomes in self.columns:
            groups: dict[str, list[Outcome]] = {}
            for outcome in outcomes:
                groups.setdefault(outcome["scope"], []).append(outcome)
            for group in groups.values():
                yield "memory_outcomes", group

    def every(self) -> list[Outcome]:
        """Every outcome, JSON writes first."""
        return self.writes + [o for outcomes in self.columns for o in outcomes]

    def rows_written(self) -> int:
        """Outcomes that added a row (duplicates and replays did not)."""
        return sum(o["status"] in ROWS_WRITTEN for o in self.every())

    def statuses(self) -> Counter[str]:
        """How many outcomes of each status."""
        return Counter(o["status"] for o in self.every())


@dataclass
class MemoryBatchWriter:
    """Applies batches of memory writes to ``service``'s store (module docstring)."""

    service: MemoryService
    traced: Callable[[int], AbstractContextManager[Any]] = lambda size: nullcontext()
    """A span around each call to the store, given the writes it holds."""

    def write(self, inputs: MemoryInputs) -> BatchOutcomes:
        """Apply the batch; on a deterministic failure, its writes one by one."""
        try:
            return self._traced(inputs)
        except Exception as exc:
            if is_retriable(exc):
                raise  # storage away: the runner pauses and retries the whole batch
            log.warning("memory batch failed (%s); applying its writes one by one", exc)
            return self.one_by_one(inputs)

    def one_by_one(self, inputs: MemoryInputs) -> BatchOutcomes:
        """Apply each write alone: a write that fails by itself is rejected."""
        out = BatchOutcomes()
        for write in inputs.writes:
            try:
                out.writes.extend(self._traced(MemoryInputs([write])).writes)
            except Exception as one:
                if is_retriable(one):
                    raise
                out.writes.append(rejected_outcome(write.event_id, write.payload.scope, one))
        for batch in inputs.columns:
            outcomes = []
            for row in _rows(batch):
                try:
                    outcomes.extend(self._traced(MemoryInputs(columns=[row])).columns[0])
                except Exception as one:
                    if is_retriable(one):
                        raise
                    event_id, scope = (
                        row.table.column(n)[0].as_py() for n in ("event_id", "scope")
                    )
                    outcomes.append(rejected_outcome(event_id, scope, one))
            out.columns.append(outcomes)
        return out

    def _traced(self, inputs: MemoryInputs) -> BatchOutcomes:
        with self.traced(len(inputs.writes) + sum(len(batch) for batch in inputs.columns)):
            return self.apply(inputs)

    def apply(self, inputs: MemoryInputs) -> BatchOutcomes:
        """Apply the whole batch in one go (raises when it fails)."""
        service, now = self.service, time.time()
        if service.settings.write_checks == "deferred":
            with service.lock, service.boundary.calls("memory write"):
                importer = service.importer
                return BatchOutcomes(
                    importer.import_writes(inputs.writes, now),
                    importer.import_columns(inputs.columns, now),
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
        out = BatchOutcomes(columns=[[] for _ in inputs.columns])
        for (_, b), outcome in zip(tagged, outcomes, strict=True):
            (out.writes if b < 0 else out.columns[b]).append(outcome)
        return out


def _rows(batch: MemoryColumns) -> list[MemoryColumns]:
    return [
        MemoryColumns(batch.table.slice(i, 1), batch.had_secrets[i : i + 1])
        for i in range(len(batch))
    ]
