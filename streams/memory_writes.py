"""Memory writes as the client builds and sends them (``AsyncPublisher.remember*``)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from loopwarden.schemas import codec
from loopwarden.schemas.ids import new_event_id
from loopwarden.schemas.known_fields import refuse_unknown_fields
from loopwarden.schemas.memory import (
    MemoryKey,
    MemoryPayload,
    MemoryWrite,
    memory_record_key,
    validate_memory_write,
)
from loopwarden.schemas.positions import default_partition


def make_memory_write(
    content: str = "",
    *,
    event_id: str | None = None,
    occurred_at: float | None = None,
    **fields: Any,
) -> MemoryWrite:
    """Build and validate a memory write; ``fields`` as in :class:`MemoryPayload`."""
    refuse_unknown_fields(fields, MemoryPayload)
    return validate_memory_write(
        {
            "event_id": event_id or new_event_id(),
            "occurred_at": time.time() if occurred_at is None else occurred_at,
            "payload": {"content": content, **fields},
        }
    )


def encode_memory_write(write: MemoryWrite) -> bytes:
    """The JSON bytes of a memory write (its vector as base64 float32)."""
    return codec.dumps(write.model_dump(mode="json", exclude_none=True))


def chunk_records(
    items: list[tuple[str, bytes]], per_record: int, max_bytes: int
) -> Iterator[list[tuple[str, bytes]]]:
    """Consecutive runs of (event id, bytes) of at most ``per_record`` items and about
    ``max_bytes`` (an item larger than that travels alone)."""
    chunk: list[tuple[str, bytes]] = []
    size = 0
    for item in items:
        if chunk and (len(chunk) >= per_record or size + len(item[1]) > max_bytes):
            yield chunk
            chunk, size = [], 0
        chunk.append(item)
        size += len(item[1]) + 1
    if chunk:
        yield chunk


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """One record of the memory-writes topic: a JSON array of writes."""

    partition: int
    key: bytes
    value: bytes
    event_ids: list[str]


def memory_records(
    writes: Sequence[MemoryWrite],
    partitions: Sequence[int],
    key_by: MemoryKey,
    per_record: int,
    max_bytes: int,
) -> list[MemoryRecord]:
    """The records that carry ``writes``: each write on the partition its key maps to
    (murmur2, as Kafka's default partitioner), grouped per partition and scope (the
    record key) in the order given, at most ``per_record`` writes or about
    ``max_bytes`` per record."""
    groups: dict[tuple[int, str], list[tuple[str, bytes]]] = {}
    for write in writes:
        key = memory_record_key(write.payload.scope, write.memory_id, key_by)
        partition = partitions[default_partition(key, len(partitions))]
        groups.setdefault((partition, write.payload.scope), []).append(
            (write.event_id, encode_memory_write(write))
        )
    return [
        MemoryRecord(
            partition,
            scope.encode(),
            b"[" + b",".join(data for _, data in chunk) + b"]",
            [event_id for event_id, _ in chunk],
        )
        for (partition, scope), encoded in groups.items()
        for chunk in chunk_records(encoded, per_record, max_bytes)
    ]
