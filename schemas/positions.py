"""Where an event came from, and which of those positions a state has applied.

An event is identified in the stream by its *origin*: the partition and offset of
the record it was published in, and its index inside that record (0 for a
single-event record). A record that reached the wrong partition (a producer that
does not partition by murmur2 of the loop id, or sent no key) is re-routed to
the loop's own partition and keeps its origin, so every event has exactly one
origin however it travelled.

Offsets are ordered only within a partition, so a state remembers the last
applied (offset, index) *per origin partition*: an event at or before it on the
same partition is a replay, an event from another partition never is.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from aiokafka.partitioner import murmur2

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True, slots=True)
class Origin:
    """The partition, offset and index-in-record an event was first published at."""

    partition: int
    offset: int
    index: int = 0


@dataclass(slots=True)
class AppliedPositions:
    """The last applied (offset, index) per origin partition."""

    last: dict[int, tuple[int, int]] = field(default_factory=dict)

    def applied(self, origin: Origin) -> bool:
        """True when the event at ``origin`` was applied before (a replay)."""
        last = self.last.get(origin.partition)
        return last is not None and (origin.offset, origin.index) <= last

    def mark(self, origin: Origin) -> None:
        """Remember ``origin`` as applied."""
        self.last[origin.partition] = (origin.offset, origin.index)

    def snapshot(self) -> dict[str, list[int]]:
        """JSON-ready form (partition numbers as string keys)."""
        return {str(p): [o, i] for p, (o, i) in self.last.items()}

    @classmethod
    def restore(cls, data: dict[str, list[int]]) -> AppliedPositions:
        """Decode :meth:`snapshot`."""
        return cls({int(p): (o, i) for p, (o, i) in data.items()})

    @classmethod
    def from_state_snapshot(cls, raw: dict[str, Any]) -> AppliedPositions:
        """The positions of a decoded state snapshot (``off``), of either version:
        1 kept one ``[offset, index]`` on the state's own partition (``p``)."""
        if raw.get("v") == 1:
            offset, index = raw["off"]
            return cls({raw["p"]: (offset, index)})
        return cls.restore(raw["off"])


@lru_cache(maxsize=200_000)
def default_partition(key: bytes, partition_count: int) -> int:
    """Kafka's default partitioner: murmur2(key) & 0x7fffffff mod partitions.

    Java clients, aiokafka and librdkafka's ``murmur2_random`` agree on it; the
    state of a loop lives on the partition its id maps to. Cached: murmur2 in
    Python costs about 4 µs, and the worker routes every event by it.
    """
    return (murmur2(key) & 0x7FFFFFFF) % partition_count


ORIGIN_HEADER = "lw.origin"
"""Header of a re-routed record: ``partition:offset:index`` where it was first published."""


def origin_header(origin: Origin) -> tuple[str, bytes]:
    """The header that carries ``origin`` with a re-routed record."""
    return ORIGIN_HEADER, f"{origin.partition}:{origin.offset}:{origin.index}".encode()


def origin_from_headers(headers: Iterable[tuple[str, bytes]] | None) -> Origin | None:
    """The origin of a re-routed record, or None for a record read where it was published."""
    for name, value in headers or ():
        if name == ORIGIN_HEADER:
            partition, offset, index = (int(part) for part in value.split(b":"))
            return Origin(partition, offset, index)
    return None


def default_partitions(keys: Sequence[bytes], partition_count: int) -> np.ndarray:
    """:func:`default_partition` of many keys at once: murmur2 in numpy, one pass per
    key length (a bulk publish keys thousands of writes by their 32-character ids)."""
    import numpy as np  # the bulk path only: a client without numpy sends one by one

    _M = np.uint32(0x5BD1E995)
    out = np.zeros(len(keys), dtype=np.int64)
    by_length: dict[int, list[int]] = {}
    for i, key in enumerate(keys):
        by_length.setdefault(len(key), []).append(i)
    with np.errstate(over="ignore"):
        for length, rows in by_length.items():
            data = np.frombuffer(b"".join(keys[i] for i in rows), dtype=np.uint8)
            data = data.reshape(len(rows), length)
            h = np.full(len(rows), 0x9747B28C ^ length, dtype=np.uint32)
            body = length // 4 * 4
            words = np.ascontiguousarray(data[:, :body]).view("<u4").astype(np.uint32)
            for column in range(body // 4):
                k = words[:, column] * _M
                k ^= k >> np.uint32(24)
                k *= _M
                h *= _M
                h ^= k
            tail = length % 4
            if tail:
                for shift in range(tail - 1, -1, -1):
                    h ^= data[:, body + shift].astype(np.uint32) << np.uint32(8 * shift)
                h *= _M
            h ^= h >> np.uint32(13)
            h *= _M
            h ^= h >> np.uint32(15)
            out[rows] = (h & np.uint32(0x7FFFFFFF)) % partition_count
    return out
