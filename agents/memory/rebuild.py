"""A memory store rebuilt from the log: every memory write and lesson, applied again.

The memory topics (``topics.memory_writes``, ``topics.memory_lessons``) are the
record; a LanceDB store is a view of them. :func:`rebuild_memory` reads both topics
from their first offset to their end as it is when the rebuild starts, and applies the
records through the memory agent's own path (:func:`~.records.inputs_of`, then
:class:`~.batches.MemoryBatchWriter`): the same decoding, redaction, de-duplication
and conflict checks, batch by batch, in the order the records were appended (record
time, then topic, partition and offset; within a batch, writes in event-time order as
the agent applies them). Writes are idempotent by event id: a rebuild into a store
that already holds some of them adds only what is missing.

Records the topics no longer hold (past ``topics.memory_retention_ms``; -1 keeps them
for ever, the default) cannot be rebuilt: the report says from which offset each
partition was read.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from loopwarden.agents.memory.batches import MemoryBatchWriter
from loopwarden.agents.memory.records import inputs_of
from loopwarden.schemas.dead_letter import SourcePosition
from loopwarden.settings import Settings
from loopwarden.streams.runtime.records import Record
from loopwarden.streams.tools.replay_reader import PartitionSpan, TopicRangeReader

if TYPE_CHECKING:
    from loopwarden.agents.memory.service import MemoryService

BATCH_RECORDS = 256
"""Records applied together (the agent's ``memory.batch_max_writes`` is of this order)."""


@dataclass
class RebuildReport:
    """What a rebuild read and what became of it."""

    records: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    dead_letters: int = 0
    spans: list[PartitionSpan] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        """One line for a person."""
        outcomes = ", ".join(f"{n} {status}" for status, n in sorted(self.statuses.items()))
        return (
            f"{self.records} record(s) of {len({s.topic for s in self.spans})} topic(s) "
            f"read in {self.seconds:.1f} s: {outcomes or 'no writes'}; "
            f"{self.dead_letters} bad write(s) skipped"
        )


async def memory_log_spans(settings: Settings) -> list[PartitionSpan]:
    """Every partition of the memory topics, from its first offset to its end now."""
    kafka = settings.kafka
    spans = []
    async with TopicRangeReader(kafka.bootstrap_servers, security=kafka.security) as reader:
        for topic in (settings.topics.memory_writes, settings.topics.memory_lessons):
            spans += await reader.whole(topic)
    return spans


async def read_memory_log(settings: Settings, spans: list[PartitionSpan]) -> list[Record]:
    """The records of ``spans``, in the order they were appended (record time, then
    topic, partition, offset)."""
    kafka = settings.kafka
    records: list[Record] = []
    async with TopicRangeReader(kafka.bootstrap_servers, security=kafka.security) as reader:
        async for batch in reader.read(spans):
            records += [
                Record(
                    r.value,
                    r.key,
                    tuple(r.headers or ()),
                    SourcePosition(r.topic, r.partition, r.offset, r.timestamp),
                )
                for r in batch
            ]
    records.sort(
        key=lambda r: (
            r.source.timestamp_ms or 0,
            r.source.topic,
            r.source.partition,
            r.source.offset,
        )
    )
    return records


def apply_records(
    service: MemoryService,
    records: Iterable[Record],
    report: RebuildReport,
    progress: Callable[[int], None] = lambda done: None,
) -> RebuildReport:
    """Apply ``records`` to ``service``'s store in batches, as the memory agent does."""
    writer = MemoryBatchWriter(service)
    batch: list[Record] = []

    def flush() -> None:
        inputs = inputs_of(batch)
        report.dead_letters += len(inputs.dead_letters)
        if inputs.writes or inputs.columns:
            report.statuses.update(writer.write(inputs).statuses())
        report.records += len(batch)
        progress(len(batch))
        batch.clear()

    for record in records:
        batch.append(record)
        if len(batch) >= BATCH_RECORDS:
            flush()
    if batch:
        flush()
    return report


async def rebuild_memory(
    settings: Settings,
    service: MemoryService,
    progress: Callable[[int], None] = lambda done: None,
    on_total: Callable[[int], None] = lambda total: None,
) -> RebuildReport:
    """Read the memory topics and apply every record to ``service``'s store."""
    started = time.monotonic()
    report = RebuildReport(spans=await memory_log_spans(settings))
    on_total(sum(span.size for span in report.spans))
    records = await read_memory_log(settings, report.spans)
    apply_records(service, records, report, progress)
    report.seconds = time.monotonic() - started
    return report
