"""Reads of Faust's and aiokafka's private state, each behind one function.

Their contract tests (``tests/unit/test_workarounds.py``) fail when a name moves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaProducer


def aiokafka_producer(app: Any) -> AIOKafkaProducer:
    """The aiokafka producer under Faust's (the one Faust flushes before commits),
    started if it was not yet."""
    producer: AIOKafkaProducer = app.producer._ensure_producer()
    return producer


@dataclass(frozen=True, slots=True)
class PartitionOffsets:
    """What Faust's consumer knows of one partition."""

    read: int | None
    """The last offset read (the next one to read right after a seek)."""
    committed: int | None
    """The next offset to read after the last commit."""
    acked: list[int]
    """Offsets acknowledged and not yet committed."""


def committed_offset(consumer: Any, tp: Any) -> int | None:
    """The next offset to read of ``tp`` after Faust's ``consumer`` last committed."""
    offset: int | None = consumer._committed_offset.get(tp)
    return offset


def partition_offsets(consumer: Any, tp: Any) -> PartitionOffsets:
    """The offsets Faust's ``consumer`` keeps for ``tp``."""
    return PartitionOffsets(
        consumer._read_offset.get(tp),
        committed_offset(consumer, tp),
        list(consumer._acked.get(tp) or ()),
    )


@dataclass(frozen=True, slots=True)
class ConsumerState:
    """What Faust's consumer holds back: paused partitions, buffered ones, unacked messages."""

    paused: list[str]
    buffered: int
    unacked: int


def consumer_state(consumer: Any) -> ConsumerState:
    """The ``SIGUSR1`` dump's view of Faust's ``consumer``."""
    return ConsumerState(
        sorted(map(str, consumer._paused_partitions)),
        len(consumer._buffered_partitions),
        len(consumer._unacked_messages),
    )


def without_monitor(app: Any) -> None:
    """Remove Faust's built-in ``Monitor`` sensor from ``app`` (about 40 % of a worker's
    throughput); loopwarden's own metrics replace it."""
    app.sensors.remove(app.monitor)


def key_partitions(table: Any) -> dict[Any, int]:
    """The memory store's key → partition index of a Faust ``table``: with it, Faust
    drops the keys of partitions the worker no longer owns once a rebalance's recovery
    is done (``Store.on_recovery_completed``). Faust fills it only for keys it read from
    the changelog; the :class:`~loopwarden.streams.runtime.table_store.TableStore`,
    which writes the store directly, keeps it for the keys it writes."""
    index: dict[Any, int] = table.data._key_partition
    return index
