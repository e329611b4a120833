"""Memory writes as Arrow columns: the bulk form of the memory-writes topic.

A record of the memory-writes topic holds one JSON write, a JSON array of writes,
or an **Arrow IPC stream** of many writes (what ``remember_many`` sends; any
language with an Arrow library can write one). An Arrow record starts with the
IPC continuation marker ``FF FF FF FF``, so a reader tells the forms apart by the
first byte. Its columns, one row per write:

==========================  ===============================  ===================
column                      Arrow type                       when null / missing
==========================  ===============================  ===================
``event_id``                string, 1–200 chars              required
``occurred_at``             float64 epoch seconds            required
``content``                 string, 1–100,000 chars          required
``memory_id``               string, ≤ 200 chars              from scope, event id
``scope``                   string, 1–200 chars              ``default``
``tags``, ``potential_questions``, ``entity_refs``
                            list<string>                     empty
``memory_type``             string                           ``fact``
``layer``                   ``short_term`` / ``long_term``   ``short_term``
``scores``                  struct<c,o,r,e,p,a,t: float64>   seed 000's defaults
``importance``              float64 in [0, 1]                the weighted scores
``source_reliability``      float64 in [0, 1]                0.7
``embedding``               (fixed-size) list<float32>       embedded by the worker
``source_loop_id``, ``source_event_id``
                            string                           none
``schema_version``, ``type`` int, ``memory_write``           1, ``memory_write``
==========================  ===============================  ===================

Integer and float columns of other widths are cast; unknown columns are ignored,
as unknown JSON fields are. Rows are checked column by column (the same limits as
:class:`~loopwarden.schemas.memory.MemoryPayload`); a row the column check refuses
is validated by the pydantic model itself, so its dead letter names the same field
errors as a JSON write's would, and a row the model accepts after all is kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from loopwarden.errors import EventDecodeError, EventError, FieldError
from loopwarden.schemas.events import MAX_TIMESTAMP, SCHEMA_VERSION
from loopwarden.schemas.ids import derived_ids
from loopwarden.schemas.memory import (
    ARROW_MEDIA_TYPE,
    MAX_EMBEDDING_DIMS,
    CorePactScores,
    MemoryWrite,
    validate_memory_write,
)
from loopwarden.schemas.redaction_columns import redact_columns

ARROW_STREAM_PREFIX = b"\xff\xff\xff\xff"
"""The first bytes of an Arrow IPC stream (its continuation marker)."""
MEDIA_TYPE = ARROW_MEDIA_TYPE
"""The ``content-type`` header the Python client puts on an Arrow record."""

SCORES = tuple(CorePactScores.model_fields)
SCORE_DEFAULTS = CorePactScores().model_dump()
_STRINGS = pa.list_(pa.string())
SCORES_TYPE = pa.struct([(name, pa.float64()) for name in SCORES])
VECTOR_TYPE = pa.list_(pa.float32())
WIRE_SCHEMA = pa.schema(
    [
        ("event_id", pa.string()),
        ("occurred_at", pa.float64()),
        ("content", pa.string()),
        ("memory_id", pa.string()),
        ("scope", pa.string()),
        ("tags", _STRINGS),
        ("potential_questions", _STRINGS),
        ("entity_refs", _STRINGS),
        ("memory_type", pa.string()),
        ("layer", pa.string()),
        ("scores", SCORES_TYPE),
        ("importance", pa.float64()),
        ("source_reliability", pa.float64()),
        ("embedding", VECTOR_TYPE),
        ("source_loop_id", pa.string()),
        ("source_event_id", pa.string()),
    ]
)
"""The columns of a checked batch (what a producer sends may use narrower types)."""
REQUIRED = ("event_id", "occurred_at", "content")
TEXT_COLUMNS, LIST_COLUMNS = ("content",), ("tags", "potential_questions", "entity_refs")
_DEFAULTS: dict[str, Any] = {
    "scope": "default",
    "memory_type": "fact",
    "layer": "short_term",
    "source_reliability": 0.7,
    "tags": [],
    "potential_questions": [],
    "entity_refs": [],
}
_ENVELOPE = ("event_id", "occurred_at", "schema_version", "type")


def is_arrow(value: bytes | None) -> bool:
    """True for a record value that is an Arrow IPC stream (not JSON)."""
    return bool(value) and value[:4] == ARROW_STREAM_PREFIX  # type: ignore[index]


def to_ipc(table: pa.Table) -> bytes:
    """The Arrow IPC stream bytes of ``table`` (a record value)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def read_ipc(value: bytes) -> pa.Table:
    """The table of an Arrow record; :class:`EventDecodeError` when it is not one
    (truncated, not Arrow, strings that are not UTF-8)."""
    try:
        table = pa.ipc.open_stream(value).read_all()
        table.validate(full=True)
    except (pa.ArrowException, OSError) as exc:
        message = f"not a readable Arrow IPC stream: {exc}"
        raise EventDecodeError(message, (FieldError("", message),)) from None
    return table


@dataclass(frozen=True, slots=True)
class MemoryColumns:
    """Checked, redacted memory writes as columns of :data:`WIRE_SCHEMA`."""

    table: pa.Table
    had_secrets: np.ndarray  # per row: secrets were redacted (here or by the publisher)
    redacted: bool = True  # False: checked only, :func:`redact` before anything stores it

    def __len__(self) -> int:
        return self.table.num_rows

    def memory_ids(self) -> list[str]:
        """Each row's memory id (its own, else derived from scope and event id, as
        :func:`~loopwarden.schemas.memory.memory_id_for`)."""
        given, scopes, event_ids = (
            self.table.column(n).to_pylist() for n in ("memory_id", "scope", "event_id")
        )
        derived = derived_ids("memory", scopes, event_ids)
        return [own or made for own, made in zip(given, derived, strict=True)]

    def to_writes(self) -> list[MemoryWrite]:
        """The rows as :class:`MemoryWrite` models (for the checked write path)."""
        return [validate_memory_write(_envelope(row)) for row in self.table.to_pylist()]


@dataclass(slots=True)
class CheckedColumns:
    """A batch split by the column check: the good rows, rows the model accepted after
    the column check refused them, and the rows' errors (row index, row, error)."""

    columns: MemoryColumns
    writes: list[tuple[int, MemoryWrite]] = field(default_factory=list)
    errors: list[tuple[int, dict[str, Any], EventError]] = field(default_factory=list)
    rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    """Where each row of ``columns`` was in the table checked."""


def _envelope(row: dict[str, Any]) -> dict[str, Any]:
    """A row as the JSON object of a write (nulls left out, so defaults apply)."""
    obj: dict[str, Any] = {k: row[k] for k in _ENVELOPE if row.get(k) is not None}
    payload = {k: v for k, v in row.items() if k not in _ENVELOPE and v is not None}
    if isinstance(payload.get("scores"), dict):
        payload["scores"] = {k: v for k, v in payload["scores"].items() if v is not None}
    obj["payload"] = payload
    return obj


def _same_kind(source: pa.DataType, target: pa.DataType) -> bool:
    """Would the model take this column's values as the target's? (Arrow also casts
    numbers to strings, which the model refuses.)"""
    types = pa.types
    if types.is_string(target):
        return types.is_string(source) or types.is_large_string(source)
    if types.is_floating(target):
        return types.is_integer(source) or types.is_floating(source)
    if types.is_list(target):
        if not (
            types.is_list(source) or types.is_large_list(source) or types.is_fixed_size_list(source)
        ):
            return False
        return _same_kind(source.value_type, target.value_type)
    return False


def _cast(column: pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray | None:
    if column.type == target:
        return column
    if pa.types.is_null(column.type):  # a column a producer never set
        return pa.chunked_array([pa.nulls(len(column), target)])
    if not _same_kind(column.type, target):
        return None  # other forms (timestamps, numbers as text) go through the model
    try:
        return column.cast(target)
    except (pa.ArrowException, TypeError):
        return None


def _scores(column: pa.ChunkedArray | None, rows: int) -> tuple[pa.Array, bool]:
    """The scores struct with every field (defaults filled); False when unreadable."""
    if column is None:
        parts = {name: pa.nulls(rows, pa.float64()) for name in SCORES}
    elif not pa.types.is_struct(column.type):
        return pa.nulls(rows, SCORES_TYPE), False
    else:
        struct = column.combine_chunks()
        names = {struct.type.field(i).name for i in range(struct.type.num_fields)}
        parts = {}
        for name in SCORES:
            if name not in names:
                parts[name] = pa.nulls(rows, pa.float64())
                continue
            cast = _cast(pa.chunked_array([struct.field(name)]), pa.float64())
            if cast is None:
                return pa.nulls(rows, SCORES_TYPE), False
            parts[name] = cast.combine_chunks()
        if struct.null_count:  # a null struct: every score takes its default
            none = pa.scalar(None, pa.float64())
            parts = {n: pc.if_else(struct.is_valid(), a, none) for n, a in parts.items()}
    filled = [pc.fill_null(parts[n], SCORE_DEFAULTS[n]) for n in SCORES]
    return pa.StructArray.from_arrays(filled, fields=list(SCORES_TYPE)), True


def _bool(mask: Any) -> np.ndarray:
    return np.asarray(pc.fill_null(mask, False).to_numpy(zero_copy_only=False), dtype=bool)


def _within(column: Any, low: float, high: float) -> Any:
    return pc.and_(pc.greater_equal(column, low), pc.less_equal(column, high))


def _length_within(column: Any, low: int, high: int) -> Any:
    return _within(pc.utf8_length(column), low, high)


def _normalised(table: pa.Table) -> tuple[dict[str, Any], np.ndarray]:
    """Every :data:`WIRE_SCHEMA` column, cast and with defaults filled, and the rows
    whose columns could be read that way."""
    rows = table.num_rows
    ok = np.ones(rows, dtype=bool)
    names = set(table.column_names)
    out: dict[str, Any] = {}
    for wire in WIRE_SCHEMA:
        if wire.name == "scores":
            out["scores"], readable = _scores(
                table.column("scores") if "scores" in names else None, rows
            )
            ok &= readable
            continue
        column = table.column(wire.name) if wire.name in names else None
        cast = None if column is None else _cast(column, wire.type)
        if cast is None:
            cast = pa.chunked_array([pa.nulls(rows, wire.type)])
            if column is not None or wire.name in REQUIRED:
                ok[:] = False  # unreadable (or missing) for every row: the model explains
        array = cast.combine_chunks()
        if wire.name in _DEFAULTS:
            default = pa.scalar(_DEFAULTS[wire.name], wire.type)
            array = pc.if_else(array.is_null(), default, array)
        out[wire.name] = array
    return out, ok


def _envelope_ok(table: pa.Table) -> np.ndarray:
    ok = np.ones(table.num_rows, dtype=bool)
    if "schema_version" in table.column_names:
        version = table.column("schema_version")
        if not pa.types.is_integer(version.type):
            return np.zeros(table.num_rows, dtype=bool)
        ok &= _bool(pc.or_kleene(version.is_null(), _within(version, 1, SCHEMA_VERSION)))
    if "type" in table.column_names:
        kind = _cast(table.column("type"), pa.string())
        if kind is None:
            return np.zeros(table.num_rows, dtype=bool)
        ok &= _bool(pc.or_kleene(kind.is_null(), pc.equal(kind, "memory_write")))
    return ok


def _vectors_ok(vectors: pa.Array) -> np.ndarray:
    """Rows without a vector, or with 1 to 8,192 finite values (no null value)."""
    valid = _bool(vectors.is_valid())
    sizes = pc.fill_null(pc.list_value_length(vectors), 0).to_numpy(zero_copy_only=False)
    ok = ~valid | ((sizes >= 1) & (sizes <= MAX_EMBEDDING_DIMS))
    flat = pc.list_flatten(vectors)
    if flat.null_count:
        parents = pc.list_parent_indices(vectors).to_numpy()
        ok[parents[~_bool(flat.is_valid())]] = False
        flat = pc.fill_null(flat, 0.0)
    finite = np.isfinite(flat.to_numpy(zero_copy_only=False))
    if finite.all():
        return ok
    parents = pc.list_parent_indices(vectors).to_numpy()
    ok[parents[~finite]] = False
    return ok


def _checks(c: dict[str, Any]) -> np.ndarray:
    """Rows within every limit of the payload model (columns already normalised)."""

    def optional(column: Any, check: Any) -> np.ndarray:
        return _bool(pc.or_kleene(column.is_null(), check))

    ok = _bool(_length_within(c["event_id"], 1, 200))
    ok &= ~_bool(pc.match_substring_regex(c["event_id"], r"[\x00-\x1f\x7f]"))
    ok &= _bool(_within(c["occurred_at"], 0.0, MAX_TIMESTAMP))  # NaN and null fail
    ok &= _bool(_length_within(c["content"], 1, 100_000))
    ok &= optional(c["memory_id"], pc.less_equal(pc.utf8_length(c["memory_id"]), 200))
    ok &= _bool(_length_within(c["scope"], 1, 200))
    ok &= _bool(pc.is_in(c["layer"], pa.array(["short_term", "long_term"])))
    for name in SCORES:
        ok &= _bool(_within(pc.struct_field(c["scores"], name), 0.0, 1.0))
    ok &= optional(c["importance"], _within(c["importance"], 0.0, 1.0))
    ok &= _bool(_within(c["source_reliability"], 0.0, 1.0))
    for name in LIST_COLUMNS:  # no null element (the model wants strings)
        values = pc.list_flatten(c[name])
        nulls = ~_bool(values.is_valid())
        if nulls.any():
            ok[pc.list_parent_indices(c[name]).to_numpy()[nulls]] = False
    return ok & _vectors_ok(c["embedding"])


def check_columns(table: pa.Table, *, redacted: bool = True) -> CheckedColumns:
    """Split ``table`` (an Arrow record's writes) into checked columns (redacted
    unless ``redacted=False``: then :func:`redact` them, several batches at once),
    rows kept by the model after the column check refused them, and rows' errors."""
    columns, ok = _normalised(table)
    if table.num_rows:
        ok &= _envelope_ok(table) & _checks(columns)
    checked = pa.table(columns, schema=WIRE_SCHEMA)
    refused = np.flatnonzero(~ok)
    writes: list[tuple[int, MemoryWrite]] = []
    errors: list[tuple[int, dict[str, Any], EventError]] = []
    if len(refused):
        for index, row in zip(refused, table.take(pa.array(refused)).to_pylist(), strict=True):
            obj = _envelope(row)
            try:
                writes.append((int(index), validate_memory_write(obj)))
            except EventError as exc:
                errors.append((int(index), obj, exc))
        checked = checked.filter(pa.array(ok))
    found = MemoryColumns(checked, np.zeros(checked.num_rows, dtype=bool), redacted=False)
    kept = np.flatnonzero(ok)
    return CheckedColumns(redact([found])[0] if redacted else found, writes, errors, kept)


def redact(batches: Sequence[MemoryColumns]) -> list[MemoryColumns]:
    """``batches`` with secrets redacted in their text columns, screened together."""
    todo = [b for b in batches if not b.redacted]
    if not todo:
        return list(batches)
    table, had_secrets = redact_columns(concat(todo).table, TEXT_COLUMNS, LIST_COLUMNS)
    done, start = {}, 0
    for batch in todo:
        rows = slice(start, start + len(batch))
        done[id(batch)] = MemoryColumns(
            table.slice(start, len(batch)), batch.had_secrets | had_secrets[rows]
        )
        start += len(batch)
    return [done.get(id(b), b) for b in batches]


def concat(batches: Sequence[MemoryColumns]) -> MemoryColumns:
    """Several batches as one (in the order given)."""
    if len(batches) == 1:
        return batches[0]
    table = pa.concat_tables([b.table for b in batches]) if batches else WIRE_SCHEMA.empty_table()
    flags = [b.had_secrets for b in batches]
    return MemoryColumns(
        table,
        np.concatenate(flags) if flags else np.zeros(0, dtype=bool),
        redacted=all(b.redacted for b in batches),
    )
