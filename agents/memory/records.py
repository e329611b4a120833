"""Memory-writes records → the writes to apply, in event-time order, and dead letters."""

from __future__ import annotations

from collections.abc import Iterable

from loopwarden.schemas.dead_letter import DeadLetter
from loopwarden.schemas.memory import MemoryWrite, validate_memory_write
from loopwarden.schemas.records import decode_record
from loopwarden.streams.runner import Record

MAX_RECORD_BYTES = 4 * 1024 * 1024
"""Largest memory-writes record decoded (one write: content up to 100k characters
plus a vector of up to 8,192 values; a JSON array of writes may hold more)."""


def writes_of(records: Iterable[Record]) -> tuple[list[MemoryWrite], list[DeadLetter]]:
    """The valid writes of ``records`` (a record holds one write or a JSON array of
    them), sorted by event time — a scope's writes spread over partitions
    (``publisher.memory_key = memory``) are checked in the order they happened, not
    in the order the partitions were fetched — and one dead letter per bad write."""
    writes: list[MemoryWrite] = []
    letters: list[DeadLetter] = []
    for record in records:
        decoded = decode_record(
            record.value, record.key, record.source, MAX_RECORD_BYTES, validate_memory_write
        )
        letters.extend(decoded.dead_letters)
        writes.extend(write for _, write in decoded.events)
    writes.sort(key=lambda write: write.occurred_at)  # stable: ties keep arrival order
    return writes, letters
