"""A Faust table written through the output sink.

Faust sends one changelog record per table write through its own per-message
produce path. :class:`TableStore` writes the table's store directly and queues
the changelog record on the :class:`~loopwarden.streams.runtime.sink.RecordSink`, to the
partition of the record being processed (where Faust would have put it), so
recovery and standbys read it exactly as Faust's own.

It also keeps the store's key → partition index, as Faust does for the keys it reads
from the changelog: once a rebalance's recovery is done, Faust drops the keys of the
partitions this worker no longer owns. Without it the keys this worker had written
stayed after their partition moved away, and when the partition came back any of them
another worker had since deleted came back to life (issue 72: a returning owner
carried on from the state it held before the scale-out).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from loopwarden.streams.runtime.sink import RecordSink
from loopwarden.streams.runtime.workarounds.private_reads import key_partitions


class TableStore:
    """Bytes keys and values in a Faust table, changelog batched by the sink."""

    def __init__(self, table: Any, sink: RecordSink) -> None:
        self.table = table
        self.sink = sink
        self.changelog = table.changelog_topic.get_topic_name()
        self.partitions = key_partitions(table)
        sink.deliver_last(self.changelog)  # a state never outlives the outputs it caused

    def get(self, key: bytes) -> bytes | None:
        """The stored value, or None."""
        value: bytes | None = self.table.get(key)
        return value

    def put(self, key: bytes, value: bytes, partition: int) -> None:
        """Store ``value`` and queue its changelog record on ``partition``."""
        self.table.data[key] = value
        self.partitions[key] = partition
        self.sink.add(self.changelog, key, value, partition=partition)

    def delete(self, key: bytes, partition: int) -> None:
        """Remove ``key`` and queue a tombstone on ``partition``."""
        self.table.data.pop(key, None)
        self.partitions.pop(key, None)
        self.sink.add(self.changelog, key, None, partition=partition)

    def keys(self) -> Iterable[bytes]:
        """The keys held by this worker (its active and standby partitions)."""
        return list(self.table.keys())
