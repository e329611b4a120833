"""What a memory store holds, as a row count and a digest of the rows' recorded content.

A store rebuilt from the memory topics (``loopwarden memory rebuild``) holds the same
memories as the one it replaces when both give the same :func:`content_digest`. The
digest covers every column the writes decide (ids, texts, scores, vectors, relations
counted by corroboration and contradiction, deletions); it leaves out what depends on
when a store applied a write or who read it since: ``updated_at``, ``trust`` (aged
from the moment of the write), ``access_count``, ``last_access_at``, ``card``; and the
vectors, which the embedder computes again from the content: the same model gives the
same vector only to within float rounding, which depends on how many texts it was given
at once (about 1e-7 apart). :func:`vector_difference` compares those.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from loopwarden.storage.memory_table import MemoryTable

PROCESSING_COLUMNS = frozenset({"updated_at", "trust", "access_count", "last_access_at", "card"})
"""Columns set by the moment a store applied a write or read a memory, not by the write."""
VECTOR_COLUMNS = frozenset({"vector", "question_vector"})


@dataclass(frozen=True)
class StoreDigest:
    """Rows and their digest (hex SHA-256 over the recorded columns, rows by id)."""

    rows: int
    digest: str

    def __str__(self) -> str:
        return f"{self.rows} memories, digest {self.digest[:16]}"


def recorded_columns(schema: pa.Schema) -> list[str]:
    """The columns a digest covers, in the schema's order."""
    left_out = PROCESSING_COLUMNS | VECTOR_COLUMNS
    return [name for name in schema.names if name not in left_out]


def content_digest(table: MemoryTable) -> StoreDigest:
    """The store's :class:`StoreDigest` (every row, deleted ones too)."""
    names = recorded_columns(table.table.schema)
    rows = table.columns(names).sort_by("id").combine_chunks()  # chunks as the rows, not the files
    hasher = hashlib.sha256()
    for batch in rows.to_batches(max_chunksize=4096):
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, batch.schema) as writer:
            writer.write_batch(batch)
        hasher.update(sink.getvalue().to_pybytes())
    return StoreDigest(rows.num_rows, hasher.hexdigest())


def vector_difference(first: MemoryTable, second: MemoryTable) -> float:
    """The largest difference between two stores' vectors of the same memory (both
    columns); ``inf`` when they do not hold the same memory ids."""
    names = ["id", *sorted(VECTOR_COLUMNS)]
    a, b = (t.columns(names).sort_by("id") for t in (first, second))
    if a.column("id").to_pylist() != b.column("id").to_pylist():
        return float("inf")
    largest = 0.0
    for column in sorted(VECTOR_COLUMNS):
        left = np.stack(a.column(column).to_numpy(zero_copy_only=False)) if a.num_rows else None
        right = np.stack(b.column(column).to_numpy(zero_copy_only=False)) if b.num_rows else None
        if left is not None and right is not None:
            largest = max(largest, float(np.max(np.abs(left - right))))
    return largest
