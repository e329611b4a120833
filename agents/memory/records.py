"""Memory-writes records → the writes to apply, in event-time order, and dead letters.

A record holds one JSON write, a JSON array of writes, or an Arrow IPC stream of
writes (:mod:`loopwarden.schemas.memory_columns`); a bad write of any form becomes
one dead letter (with its index in the record) and the rest are applied.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from loopwarden.errors import EventDecodeError
from loopwarden.schemas import codec
from loopwarden.schemas.dead_letter import DeadLetter
from loopwarden.schemas.memory import MemoryWrite, validate_memory_write
from loopwarden.schemas.memory_columns import (
    MemoryColumns,
    check_columns,
    is_arrow,
    read_ipc,
    redact,
)
from loopwarden.schemas.records import decode_record
from loopwarden.streams.runtime.records import Record

MAX_RECORD_BYTES = 4 * 1024 * 1024
"""Largest memory-writes record decoded (one write: content up to 100k characters
plus a vector of up to 8,192 values; a JSON array of writes may hold more)."""


@dataclass(slots=True)
class MemoryInputs:
    """What a batch of memory-writes records asks to store."""

    writes: list[MemoryWrite] = field(default_factory=list)  # JSON writes, in event-time order
    columns: list[MemoryColumns] = field(default_factory=list)  # one per Arrow record
    dead_letters: list[DeadLetter] = field(default_factory=list)


def inputs_of(records: Iterable[Record]) -> MemoryInputs:
    """The valid writes of ``records`` and one dead letter per bad write. JSON writes
    are sorted by event time — a scope's writes spread over partitions
    (``publisher.memory_key = memory``) are checked in the order they happened, not in
    the order the partitions were fetched; an Arrow record's rows stay together."""
    out = MemoryInputs()
    arrow: list[tuple[Record, pa.Table]] = []
    for record in records:
        if is_arrow(record.value):
            assert record.value is not None
            try:
                arrow.append((record, read_ipc(record.value)))
            except EventDecodeError as exc:
                letter = DeadLetter.from_error(exc, record.value, record.source, record.key)
                out.dead_letters.append(letter)
            continue
        decoded = decode_record(
            record.value, record.key, record.source, MAX_RECORD_BYTES, validate_memory_write
        )
        out.dead_letters.extend(decoded.dead_letters)
        out.writes.extend(write for _, write in decoded.events)
    for group in _same_schema(arrow):
        _check_into(out, group)
    out.writes.sort(key=lambda write: write.occurred_at)  # stable: ties keep arrival order
    out.columns = redact(out.columns)  # every Arrow record's texts screened at once
    return out


def _same_schema(arrow: list[tuple[Record, pa.Table]]) -> list[list[tuple[Record, pa.Table]]]:
    """Runs of consecutive records whose tables share a schema (checked together: a
    column check costs about the same for 200 rows as for 20,000)."""
    groups: list[list[tuple[Record, pa.Table]]] = []
    for item in arrow:
        if groups and groups[-1][0][1].schema.equals(item[1].schema):
            groups[-1].append(item)
        else:
            groups.append([item])
    return groups


def _check_into(out: MemoryInputs, group: list[tuple[Record, pa.Table]]) -> None:
    """Check a run of Arrow records at once; dead letters name each bad row's own
    record and index, and each record's good rows stay one batch."""
    starts = np.cumsum([0, *(table.num_rows for _, table in group)])
    table = group[0][1] if len(group) == 1 else pa.concat_tables([t for _, t in group])
    checked = check_columns(table, redacted=False)
    for index, obj, error in checked.errors:
        at = int(np.searchsorted(starts, index, side="right")) - 1
        record = group[at][0]
        raw = codec.dumps(obj)  # the row as a JSON write: readable in the dead letter
        out.dead_letters.append(
            DeadLetter.from_error(error, raw, record.source, record.key, index - int(starts[at]))
        )
    out.writes.extend(write for _, write in checked.writes)  # the model kept them
    owners = np.searchsorted(starts, checked.rows, side="right") - 1
    whole, position = checked.columns, 0
    for count in np.bincount(owners, minlength=len(group)).tolist():
        if count:  # a record's rows, in order
            out.columns.append(
                MemoryColumns(
                    whole.table.slice(position, count),
                    whole.had_secrets[position : position + count],
                    redacted=False,
                )
            )
        position += count


def writes_of(records: Iterable[Record]) -> tuple[list[MemoryWrite], list[DeadLetter]]:
    """Every valid write of ``records`` as a model (Arrow rows too), in event-time
    order, and the dead letters (the checked write path and the tests read this)."""
    inputs = inputs_of(records)
    writes = inputs.writes + [w for batch in inputs.columns for w in batch.to_writes()]
    writes.sort(key=lambda write: write.occurred_at)
    return writes, inputs.dead_letters
