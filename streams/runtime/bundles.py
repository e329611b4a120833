"""Record bundles: a partition's fetched records handed to an agent as one Faust message.

Faust pays about 300 µs of CPU per consumed record on this kind of machine
(an Event, a channel queue hand-off, an ack, offset tracking, a ``wait_first``
per message), whatever the agent does with it. For the Python publisher's
records (up to 50 events each) that is cheap per event; for a producer that
sends one event per record (Java, Go, librdkafka, kcat, the adapters) it was
two thirds of the worker's CPU.

For the topics an agent declares *bundled*, the worker's consumer turns each
fetched run of a partition's records into one message whose value is a
:class:`RecordBundle` (at most ``kafka.bundle_max_records`` records and
``kafka.bundle_max_bytes`` of values, standing at the last one's offset).
Faust's group membership, partition ownership, table changelogs and recovery
are untouched: only the per-record hand-off is shared.
:class:`~loopwarden.streams.runtime.runner.AgentRunner` opens a bundle and applies the
error policy to each record on its own.

Offsets stay exact: a bundle's earlier offsets are acknowledged only with the
bundle's own message, by :class:`BundleAcks`, a Faust sensor (Faust calls
``on_message_out`` once a message is fully acknowledged, on its compiled stream
path too, which acknowledges inline without calling ``Consumer.ack``). So no
commit passes a record that was not processed, and Faust's gap bookkeeping (an
interval tree rebuilt on every addition) is not used for them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import faust
from aiokafka.structs import ConsumerRecord

from loopwarden.streams.runtime.service_log import SERVICE_LOG


@dataclass(frozen=True, slots=True)
class RecordBundle:
    """Consecutive consumed records of one topic-partition (aiokafka ``ConsumerRecord``)."""

    records: tuple[Any, ...]
    opened: list[Any] = field(default_factory=list, compare=False, repr=False)
    """The records as handlers see them, made once for every agent reading the bundle
    (:meth:`loopwarden.streams.runtime.records.Record.all_of`)."""

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.records)

    @property
    def first_offset(self) -> int:
        """The offset of the bundle's first record."""
        return int(self.records[0].offset)


def bundle_records(records: Sequence[Any], max_records: int, max_bytes: int) -> list[Any]:
    """``records`` of one partition as consumer records carrying bundles of at most
    ``max_records`` records and (but for a single larger record) ``max_bytes`` of
    values; each stands at its last record's offset and timestamp."""
    bundles: list[Any] = []
    chunk: list[Any] = []
    size = 0
    for record in records:
        value_size = record.serialized_value_size
        if chunk and (len(chunk) >= max_records or size + value_size > max_bytes):
            bundles.append(_bundle(chunk))
            chunk, size = [], 0
        chunk.append(record)
        size += value_size
    if chunk:
        bundles.append(_bundle(chunk))
    return bundles


def _bundle(chunk: list[Any]) -> Any:
    last = chunk[-1]
    return ConsumerRecord(
        topic=last.topic,
        partition=last.partition,
        offset=last.offset,
        timestamp=last.timestamp,
        timestamp_type=last.timestamp_type,
        key=None,
        value=RecordBundle(tuple(chunk)),
        checksum=None,
        serialized_key_size=sum(r.serialized_key_size for r in chunk),
        serialized_value_size=sum(r.serialized_value_size for r in chunk),
        headers=(),
    )


def bundle_fetched(
    records: dict[Any, list[Any]], topics: set[str], max_records: int, max_bytes: int
) -> None:
    """Replace, in place, the fetched records of ``topics`` by bundles."""
    if not topics or max_records <= 1:
        return
    for tp, fetched in records.items():
        if tp.topic in topics and len(fetched) > 0:
            records[tp] = bundle_records(fetched, max_records, max_bytes)


class BundleAcks(faust.Sensor):
    """Acknowledges a bundle's earlier offsets when Faust acknowledges its message."""

    logger = SERVICE_LOG  # mode's start/stop narration, quiet at info

    def __init__(self, app: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.app = app

    def on_message_out(self, tp: Any, offset: int, message: Any) -> None:
        value = message.value
        if isinstance(value, RecordBundle) and value.first_offset < offset:
            self.app.consumer.ack_bundle_members(tp, value.first_offset, offset)
