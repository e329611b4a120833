"""Memory writes as the client builds and sends them (``AsyncPublisher.remember*``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from loopwarden.schemas import codec
from loopwarden.schemas.ids import new_event_id
from loopwarden.schemas.known_fields import refuse_unknown_fields
from loopwarden.schemas.memory import MemoryPayload, MemoryWrite, validate_memory_write


def make_memory_write(
    content: str, *, event_id: str | None = None, occurred_at: float | None = None, **fields: Any
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
