"""The topics of :class:`~loopwarden.streams.runtime.in_memory.InMemoryWorker`: records
in a dict, keyed and partitioned as Kafka's default partitioner does, and the clock a
test moves on."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from loopwarden.schemas import codec
from loopwarden.schemas.positions import default_partition
from loopwarden.streams.runtime.record_queue import Header


@dataclass(frozen=True, slots=True)
class StoredRecord:
    """One record of an in-memory topic."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]
    timestamp_ms: int

    def json(self) -> Any:
        """The value decoded as JSON."""
        return codec.loads(self.value) if self.value is not None else None


class ManualClock:
    """The worker's clocks, moved on by the test: a monotonic one and the wall clock."""

    def __init__(self, wall: float | None = None) -> None:
        self._monotonic = 0.0
        self._wall = time.time() if wall is None else wall

    def monotonic(self) -> float:
        """Seconds on the monotonic clock (starts at 0)."""
        return self._monotonic

    def time(self) -> float:
        """The wall clock (seconds since the epoch)."""
        return self._wall

    def advance(self, seconds: float) -> None:
        """Move both clocks ``seconds`` on."""
        if seconds < 0:
            raise ValueError(f"a clock does not go back ({seconds} s)")
        self._monotonic += seconds
        self._wall += seconds


class InMemoryTopics:
    """Topics of ``partitions`` partitions in memory, written as the worker's sink is
    (``add``: a record keyed, partitioned by its key unless told its partition)."""

    def __init__(self, partitions: int, clock: ManualClock) -> None:
        if partitions < 1:
            raise ValueError(f"a topic has at least one partition, not {partitions}")
        self.partitions = partitions
        self.clock = clock
        self._topics: dict[str, list[list[StoredRecord]]] = {}

    def add(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        *,
        partition: int | None = None,
        headers: Sequence[Header] = (),
    ) -> StoredRecord:
        """Append one record (``partition=None``: Kafka's default partitioner; a record
        without a key goes to partition 0)."""
        if partition is None:
            partition = default_partition(key, self.partitions) if key is not None else 0
        if not 0 <= partition < self.partitions:
            raise ValueError(f"{topic} has partitions 0-{self.partitions - 1}, not {partition}")
        log_ = self._partitions(topic)[partition]
        stored = StoredRecord(
            topic,
            partition,
            len(log_),
            key,
            value,
            tuple(headers),
            int(self.clock.time() * 1000),
        )
        log_.append(stored)
        return stored

    def partition(self, topic: str, partition: int) -> list[StoredRecord]:
        """The records of one partition, by offset."""
        found = self._topics.get(topic)
        return list(found[partition]) if found is not None else []

    def since(self, topic: str, partition: int, offset: int) -> list[StoredRecord]:
        """The records of one partition from ``offset`` on."""
        found = self._topics.get(topic)
        return found[partition][offset:] if found is not None else []

    def records(self, topic: str) -> list[StoredRecord]:
        """Every record of ``topic``, partition by partition, each by offset."""
        return [record for records in self._topics.get(topic, ()) for record in records]

    def values(self, topic: str) -> list[Any]:
        """Every record's value of ``topic`` as JSON (partition by partition)."""
        return [record.json() for record in self.records(topic)]

    def names(self) -> list[str]:
        """The topics written so far."""
        return sorted(self._topics)

    def _partitions(self, topic: str) -> list[list[StoredRecord]]:
        found = self._topics.get(topic)
        if found is None:
            found = self._topics[topic] = [[] for _ in range(self.partitions)]
        return found
