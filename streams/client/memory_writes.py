"""Memory writes as the client builds and sends them (``AsyncPublisher.remember*``).

``remember_many`` sends Arrow IPC records (:mod:`loopwarden.schemas.memory_columns`)
when pyarrow is installed (``loopwarden[bulk]``, or the worker), else JSON arrays:
both grouped per partition and scope. numpy and pyarrow are imported by the Arrow
path only, so a client without them sends JSON.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from loopwarden.errors import ConfigurationError
from loopwarden.schemas import codec
from loopwarden.schemas.events import envelope, to_epoch_seconds
from loopwarden.schemas.ids import new_event_id
from loopwarden.schemas.known_fields import refuse_unknown_fields
from loopwarden.schemas.memory import (
    ARROW_MEDIA_TYPE,
    MemoryKey,
    MemoryPayload,
    MemoryWrite,
    memory_record_key,
    validate_memory_write,
)
from loopwarden.schemas.positions import default_partition

if TYPE_CHECKING:
    import pyarrow as pa

    from loopwarden.schemas.memory_columns import MemoryColumns

ARROW_EXTRA = "pip install 'loopwarden[bulk]'"


@functools.cache
def arrow_available() -> bool:
    """True when the Arrow encoding can be used (numpy and pyarrow importable)."""
    try:
        import numpy  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


def make_memory_write(
    content: str = "",
    *,
    event_id: str | None = None,
    occurred_at: float | None = None,
    **fields: Any,
) -> MemoryWrite:
    """Build and validate a memory write; ``fields`` as in :class:`MemoryPayload`."""
    refuse_unknown_fields(fields, MemoryPayload)
    payload = {"content": content, **fields}
    return validate_memory_write(envelope(payload, event_id=event_id, occurred_at=occurred_at))


def encode_memory_write(write: MemoryWrite) -> bytes:
    """The JSON bytes of a memory write (its vector as base64 float32)."""
    return codec.dumps(write.model_dump(mode="json", exclude_none=True))


def memory_write_record(
    content: str, key_by: MemoryKey, *, event_id: str | None = None, **fields: Any
) -> tuple[str, bytes, bytes]:
    """``remember``'s record: its event id, key (the memory id or the scope, as
    ``key_by`` says) and JSON value; ``fields`` as in :class:`MemoryPayload`."""
    write = make_memory_write(content, event_id=event_id, **fields)
    key = memory_record_key(write.payload.scope, write.memory_id, key_by)
    return write.event_id, key, encode_memory_write(write)


def memory_record_headers(encoding: MemoryEncoding) -> list[tuple[str, bytes]]:
    """The headers of ``remember_many``'s records: an Arrow record names its media type."""
    return [("content-type", ARROW_MEDIA_TYPE.encode())] if encoding == "arrow" else []


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


MemoryEncoding = Literal["arrow", "json"]
"""How ``remember_many`` sends writes: Arrow IPC records (columns, the default when
pyarrow is installed) or JSON arrays (for readers of the topic that only read JSON)."""
_ITEM_FIELDS = frozenset(MemoryPayload.model_fields) | {"event_id", "occurred_at"}
_STRING_COLUMNS = ("memory_id", "scope", "memory_type", "layer", "source_loop_id")
_OPTIONAL_FLOATS = ("importance", "source_reliability")


class _NotPlain(Exception):
    """An item the column fast path does not take as it is (the model decides)."""


def _vectors(values: list[Any]) -> pa.Array:
    import numpy as np
    import pyarrow as pa

    if all(isinstance(v, np.ndarray) for v in values) and len({v.size for v in values}) == 1:
        matrix = np.stack(values).astype(np.float32, copy=False)  # the common case: one stack
        flat = pa.array(matrix.reshape(-1))
        return pa.FixedSizeListArray.from_arrays(flat, matrix.shape[1])
    vectors: list[Any] = []
    for v in values:
        if v is None:
            vectors.append(None)
        elif isinstance(v, np.ndarray | list | tuple):
            vectors.append(np.asarray(v, dtype=np.float32).reshape(-1))
        else:
            raise _NotPlain
    return pa.array(vectors, pa.list_(pa.float32()))


def _items_table(items: Sequence[Mapping[str, Any]], now: float) -> pa.Table:
    """The Arrow columns of ``remember_many`` items, built without a model per item."""
    import pyarrow as pa

    from loopwarden.schemas.memory_columns import SCORES_TYPE

    for item in items:
        if not item.keys() <= _ITEM_FIELDS or not isinstance(item.get("content"), str):
            raise _NotPlain
    occurred = [item.get("occurred_at") for item in items]
    if any(not isinstance(t, float | int) or isinstance(t, bool) for t in occurred):
        occurred = [now if t is None else to_epoch_seconds(t) for t in occurred]
    columns: dict[str, Any] = {
        "event_id": pa.array([i.get("event_id") or new_event_id() for i in items], pa.string()),
        "occurred_at": pa.array(occurred, pa.float64()),
        "content": pa.array([i["content"] for i in items], pa.string()),
    }
    for name in (*_STRING_COLUMNS, "source_event_id"):
        columns[name] = pa.array([i.get(name) for i in items], pa.string())
    for name in ("tags", "potential_questions", "entity_refs"):
        columns[name] = pa.array([i.get(name) for i in items], pa.list_(pa.string()))
    for name in _OPTIONAL_FLOATS:
        columns[name] = pa.array([i.get(name) for i in items], pa.float64())
    scores = [i.get("scores") for i in items]
    if any(s is not None and not isinstance(s, dict) for s in scores):
        scores = [dump() if (dump := getattr(s, "model_dump", None)) else s for s in scores]
    columns["scores"] = pa.array(scores, SCORES_TYPE)
    columns["embedding"] = _vectors([i.get("embedding") for i in items])
    return pa.table(columns)


def writes_table(writes: Sequence[MemoryWrite]) -> pa.Table:
    """Validated writes as Arrow columns of the wire schema."""
    import numpy as np
    import pyarrow as pa

    from loopwarden.schemas.memory_columns import WIRE_SCHEMA

    rows = []
    for write in writes:
        row = write.payload.model_dump()
        row.update(event_id=write.event_id, occurred_at=write.occurred_at)
        vector = row["embedding"]
        row["embedding"] = None if vector is None else vector.astype(np.float32).tolist()
        rows.append(row)
    return pa.Table.from_pylist(rows, schema=WIRE_SCHEMA)


def memory_columns(items: Sequence[Mapping[str, Any]]) -> tuple[MemoryColumns, list[str]]:
    """``remember_many`` items as checked, redacted columns, and their event ids in the
    order given; raises the error a JSON write of the first bad item would
    (:class:`EventValidationError` naming its fields), so a bad item sends nothing."""
    import pyarrow as pa

    from loopwarden.schemas.memory_columns import check_columns, concat

    try:
        table = _items_table(items, time.time())
    except (_NotPlain, pa.ArrowException, TypeError, ValueError):
        table = writes_table([make_memory_write(**item) for item in items])  # raises, or all valid
    checked = check_columns(table)
    for index, _, error in checked.errors:
        make_memory_write(**items[index])  # the item's own error, field by field
        raise error
    event_ids = table.column("event_id").to_pylist()
    if not checked.writes:
        return checked.columns, event_ids
    rescued = check_columns(writes_table([w for _, w in checked.writes])).columns
    return concat([checked.columns, rescued]), event_ids


def memory_write_records(
    items: Sequence[Mapping[str, Any]],
    encoding: MemoryEncoding,
    partitions: Sequence[int],
    key_by: MemoryKey,
    per_record: int | None,
    max_bytes: int,
) -> tuple[list[MemoryRecord], list[str]]:
    """The records of ``remember_many`` and the event ids in the order given (every item
    validated and redacted first: a bad item raises and nothing is built)."""
    if encoding not in ("arrow", "json"):
        raise ValueError(f"encoding {encoding!r}: expected 'arrow' or 'json'")
    if not items:
        return [], []
    if encoding == "arrow":
        if not arrow_available():
            raise ConfigurationError(
                f"remember_many(encoding='arrow') needs numpy and pyarrow: {ARROW_EXTRA}, "
                "or send JSON (encoding='json')"
            )
        columns, event_ids = memory_columns(items)
        return column_records(columns, partitions, key_by, per_record or 2000, max_bytes), event_ids
    writes = [make_memory_write(**item) for item in items]
    records = memory_records(writes, partitions, key_by, per_record or 200, max_bytes)
    return records, [write.event_id for write in writes]


def column_records(
    columns: MemoryColumns,
    partitions: Sequence[int],
    key_by: MemoryKey,
    per_record: int,
    max_bytes: int,
) -> list[MemoryRecord]:
    """The Arrow records that carry ``columns``: each write on the partition its key maps
    to, grouped per partition and scope, at most ``per_record`` writes and about
    ``max_bytes`` per record."""
    import pyarrow as pa

    from loopwarden.schemas.memory_columns import to_ipc
    from loopwarden.schemas.positions import default_partitions

    table = columns.table
    if not table.num_rows:
        return []
    scopes = table.column("scope").to_pylist()
    keys = columns.memory_ids() if key_by == "memory" else scopes
    if key_by not in ("memory", "scope"):
        raise ValueError(f"memory key {key_by!r}: expected 'memory' or 'scope'")
    slots = default_partitions([key.encode() for key in keys], len(partitions))
    groups: dict[tuple[int, str], list[int]] = {}
    for row, (slot, scope) in enumerate(zip(slots.tolist(), scopes, strict=True)):
        groups.setdefault((partitions[slot], scope), []).append(row)
    row_bytes = max(1, table.nbytes // table.num_rows)
    step = max(1, min(per_record, max_bytes // row_bytes))
    event_ids = table.column("event_id")
    records = []
    for (partition, scope), rows in groups.items():
        for start in range(0, len(rows), step):
            taken = pa.array(rows[start : start + step])
            records.append(
                MemoryRecord(
                    partition,
                    scope.encode(),
                    to_ipc(table.take(taken)),
                    event_ids.take(taken).to_pylist(),
                )
            )
    return records
