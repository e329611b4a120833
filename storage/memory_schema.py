"""The memory store's Arrow schemas and the conversions between rows and Arrow tables."""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from loopwarden.schemas import codec

SCORE_COLUMNS = ("r", "c", "t", "a", "p", "o", "e")


def memory_schema(dims: int) -> pa.Schema:
    """The Arrow schema of the memories table for ``dims``-dimensional vectors."""
    strings = pa.list_(pa.string())
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("scope", pa.string()),
            pa.field("content", pa.string()),
            pa.field("tags", strings),
            pa.field("potential_questions", strings),
            pa.field("entity_refs", strings),
            pa.field("memory_type", pa.string()),
            pa.field("layer", pa.string()),
            *[pa.field(c, pa.float64()) for c in SCORE_COLUMNS],
            pa.field("importance", pa.float64()),
            pa.field("source_reliability", pa.float64()),
            pa.field("trust", pa.float64()),
            pa.field("corroboration_count", pa.int32()),
            pa.field("contradiction_count", pa.int32()),
            pa.field("corroborated_by", strings),
            pa.field("access_count", pa.int32()),
            pa.field("last_access_at", pa.float64()),
            pa.field("created_at", pa.float64()),
            pa.field("updated_at", pa.float64()),
            pa.field("decay_rate", pa.float64()),
            pa.field("deleted", pa.bool_()),
            pa.field("source_loop_id", pa.string()),
            pa.field("source_event_id", pa.string()),
            pa.field("vector", pa.list_(pa.float32(), dims)),
            pa.field("question_vector", pa.list_(pa.float32(), dims)),
            pa.field("card", pa.binary()),
        ]
    )


CARD_FIELDS = ("content", "tags", "potential_questions", "entity_refs", "memory_type")
CARD_NUMBERS = ("c", "o", "r", "e", "p", "a", "t", "created_at")
_NUMBERS = struct.Struct("<8d")
"""A memory's card: what a search reads of it that never changes once it is stored,
in one binary column: the seven scores and ``created_at`` as little-endian float64
(64 bytes), then a JSON array of content, tags, questions, entities and type. LanceDB
pays about a millisecond per column of a random read: the answer's 17 columns took
15 ms for 30 rows at a million memories, the card and the four columns that change
(``id``, ``trust``, ``layer``, ``deleted``) 5 ms."""


def with_cards(data: pa.Table) -> pa.Table:
    """``data`` (rows of the memory schema) with each row's card made from its columns
    (always: a row built from another, as a consolidated memory is, must not keep the
    other's card)."""
    if "card" not in data.column_names:
        return data
    numbers = np.column_stack(
        [data.column(n).to_numpy(zero_copy_only=False) for n in CARD_NUMBERS]
    ).astype("<f8")
    packed = numbers.tobytes()
    size = _NUMBERS.size
    texts = zip(*(data.column(name).to_pylist() for name in CARD_FIELDS), strict=True)
    cards = [
        packed[i * size : (i + 1) * size] + codec.dumps(fields) for i, fields in enumerate(texts)
    ]
    index = data.schema.get_field_index("card")
    return data.set_column(index, "card", pa.array(cards, pa.binary()))


def read_card(card: bytes) -> dict[str, Any]:
    """The columns a card holds, by name."""
    numbers = _NUMBERS.unpack_from(card)
    fields = codec.loads(card[_NUMBERS.size :])
    return {
        **dict(zip(CARD_NUMBERS, numbers, strict=True)),
        **dict(zip(CARD_FIELDS, fields, strict=True)),
    }


STATE_SCHEMA = pa.schema(
    [
        pa.field("key", pa.string(), nullable=False),
        pa.field("number", pa.float64()),
        pa.field("text", pa.string()),
    ]
)
"""Small bookkeeping values (the conflict upkeep's cursor)."""

RELATION_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("src", pa.string()),
        pa.field("dst", pa.string()),
        pa.field("type", pa.string()),
        pa.field("confidence", pa.float64()),
        pa.field("reason", pa.string()),
        pa.field("created_at", pa.float64()),
    ]
)


VECTOR_COLUMNS = ("vector", "question_vector")
UPDATE_CHUNK = 10_000  # ids per SQL update


def quote(value: str) -> str:
    """An SQL string literal."""
    return "'" + value.replace("'", "''") + "'"


def quote_list(values: Iterable[str]) -> str:
    """``'a', 'b'`` for an SQL ``IN (...)`` list."""
    return ", ".join(quote(v) for v in values)


def rows_to_arrow(rows: Sequence[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    """Rows (vectors as numpy arrays or lists) as an Arrow table of ``schema``.

    Vectors go to fixed-size list columns from one stacked numpy array; the
    other columns through ``from_pylist``, which is what costs per row.
    """
    scalar_schema = pa.schema([f for f in schema if f.name not in VECTOR_COLUMNS])
    names = scalar_schema.names
    table = pa.Table.from_pylist([{n: row.get(n) for n in names} for row in rows], scalar_schema)
    for name in VECTOR_COLUMNS:
        if name not in schema.names:
            continue
        field = schema.field(name)
        flat = np.stack([np.asarray(row[name], dtype=np.float32) for row in rows]).ravel()
        vectors = pa.FixedSizeListArray.from_arrays(pa.array(flat), field.type.list_size)
        table = table.append_column(field, vectors)
    return table.select(schema.names)


def arrow_rows(table: pa.Table) -> list[dict[str, Any]]:
    """Rows of an Arrow table as dicts; vector columns become numpy row views."""
    vectors = {
        name: table.column(name)
        .combine_chunks()
        .flatten()
        .to_numpy()
        .reshape(table.num_rows, table.schema.field(name).type.list_size)
        for name in VECTOR_COLUMNS
        if name in table.column_names
    }
    rows = table.drop_columns(list(vectors)).to_pylist()
    for name, matrix in vectors.items():
        for row, vector in zip(rows, matrix, strict=True):
            row[name] = vector
    return rows
