"""What both memory agents do with a batch of records, without Faust: decode, write,
the outcomes.

:class:`MemoryStep` is the capability's batch step
(:class:`~loopwarden.streams.runtime.capability.BatchProcessing`): the worker's agents
run its two halves in a thread each (:mod:`loopwarden.agents.memory.agent`), the
in-memory worker runs it in line. The records are decoded into writes (a JSON write, a
JSON array, an Arrow record checked and redacted; what cannot be read is a dead
letter), the writes applied by :class:`~loopwarden.agents.memory.batches.MemoryBatchWriter`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from opentelemetry.trace import SpanKind

from loopwarden.agents.memory.batches import BatchOutcomes, MemoryBatchWriter
from loopwarden.agents.memory.records import MemoryInputs, inputs_of
from loopwarden.agents.memory.shared import shared_memory
from loopwarden.schemas.dead_letter import DeadLetter
from loopwarden.settings import Settings
from loopwarden.streams.runtime.capability import Batches
from loopwarden.streams.runtime.records import Record
from loopwarden.streams.runtime.resources import WorkerResources
from loopwarden.streams.runtime.telemetry.spans import child_span

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

MEMORY_TABLE_NAME = "memories"


@dataclass(slots=True)
class MemoryBatchOutcome:
    """A batch's dead letters and, when it held writes, what became of them."""

    inputs: MemoryInputs
    written: BatchOutcomes | None = None

    @property
    def dead_letters(self) -> Sequence[DeadLetter]:
        """The records that could not be read as writes."""
        return self.inputs.dead_letters

    def outputs(self) -> Iterator[tuple[str, Any]]:
        """The named outputs: the writes' outcomes (none for a batch of dead letters)."""
        if self.written is not None:
            yield from self.written.outputs()

    def rows_written(self) -> int:
        """Rows the batch added to the store."""
        return self.written.rows_written() if self.written is not None else 0


class MemoryStep:
    """Decode a batch of memory records and apply its writes (module docstring)."""

    def __init__(self, writer: MemoryBatchWriter) -> None:
        self.writer = writer

    def decode(self, records: list[Record]) -> MemoryBatchOutcome:
        """The batch's writes and dead letters, nothing applied yet."""
        return MemoryBatchOutcome(inputs_of(records))

    def write(self, decoded: MemoryBatchOutcome) -> MemoryBatchOutcome:
        """Apply the decoded writes (a transient storage failure is raised)."""
        inputs = decoded.inputs
        if not inputs.writes and not inputs.columns:
            return decoded
        return MemoryBatchOutcome(inputs, self.writer.write(inputs))

    def __call__(self, records: list[Record]) -> MemoryBatchOutcome:
        return self.write(self.decode(records))


def memory_step(
    settings: Settings, resources: WorkerResources, tracer: Tracer | None = None
) -> MemoryStep:
    """The step over the worker's one memory service, each write traced under ``tracer``."""

    def traced(size: int) -> Any:
        return child_span(
            tracer,
            f"add {MEMORY_TABLE_NAME}",
            SpanKind.CLIENT,
            **{
                "db.system.name": "lancedb",
                "db.operation.name": "add",
                "db.collection.name": MEMORY_TABLE_NAME,
                "db.operation.batch.size": size,
            },
        )

    return MemoryStep(MemoryBatchWriter(shared_memory(resources), traced))


def memory_batches(settings: Settings) -> Batches:
    """Clients' writes: up to ``memory.batch_max_writes`` or ``batch_within_s``."""
    cfg = settings.memory
    return Batches(cfg.batch_max_writes, cfg.batch_within_s, cfg.batch_max_bytes, commit=True)


def lesson_batches(settings: Settings) -> Batches:
    """The monitor's lessons: the same bounds, collected over ``memory.lessons_within_s``
    (nobody awaits a lesson's outcome)."""
    cfg = settings.memory
    return Batches(cfg.batch_max_writes, cfg.lessons_within_s, cfg.batch_max_bytes, commit=True)
