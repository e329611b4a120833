"""What the output router and the dead letters write records to (the worker's
:class:`~loopwarden.streams.runtime.sink.RecordSink`, or topics in memory)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

Header = tuple[str, bytes]


class RecordQueue(Protocol):
    """Takes records for topics, keyed, partitioned by key unless told a partition."""

    def add(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        *,
        partition: int | None = None,
        headers: Sequence[Header] = (),
    ) -> Any:
        """Queue one record (``partition=None``: Kafka's default partitioner)."""
