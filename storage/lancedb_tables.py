"""Opening LanceDB tables: one way for every store (memories, relations, experiences)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import lancedb
import pyarrow as pa

from loopwarden.errors import ConfigurationError
from loopwarden.storage.boundary import boundary_for


def connect(uri: str, read_consistency_s: float | None) -> Any:
    """A LanceDB connection whose reads see other processes' writes within
    ``read_consistency_s`` (0: every read checks; None: never, a handle keeps its version)."""
    interval = None if read_consistency_s is None else timedelta(seconds=read_consistency_s)
    db = lancedb.connect(uri, read_consistency_interval=interval)
    boundary_for(uri).opened()  # the directory as it is when opened (see storage.boundary)
    return db


def open_or_create(db: Any, name: str, schema: pa.Schema, existing: set[str]) -> Any:
    """Table ``name`` (``existing``: the names ``db`` lists), created with ``schema`` if
    missing (a writer racing to create it is fine)."""
    if name in existing:
        table = db.open_table(name)
    else:
        table = db.create_table(name, schema=schema, exist_ok=True)
    boundary_for(db.uri).opened(name)
    return table


def open_vector_table(
    db: Any, name: str, schema: pa.Schema, existing: set[str], what: str = "table"
) -> Any:
    """:func:`open_or_create` for a table with a ``vector`` column; a stored table whose
    vectors have another size than ``schema``'s is refused (another embedder made it)."""
    table = open_or_create(db, name, schema, existing)
    stored = table.schema.field("vector").type.list_size
    wanted = schema.field("vector").type.list_size
    if stored != wanted:
        raise ConfigurationError(
            f"{what} {name!r} holds {stored}-d vectors; the embedder gives {wanted}-d"
        )
    return table
