"""Memories and their relations in LanceDB (a local directory or any LanceDB URI).

One row per memory (content, tags, questions, entities, the seven C.O.R.E.
P.A.C.T. scores, trust and its evidence counts, access statistics, layer, soft
delete flag, content and question vectors); relations (``contradicts``,
``supersedes``) in a second table. Writes are idempotent upserts keyed by id.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Any

import lancedb
import numpy as np
import pyarrow as pa

from loopwarden.errors import ConfigurationError

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
        ]
    )


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


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


class MemoryTable:
    """The memories and relations tables of one LanceDB database.

    ``read_consistency_s``: how stale a read may be with respect to writes made by
    other processes (an analyst group, ``loopwarden memory``): LanceDB checks for a
    newer table version at most that often (0: on every read; None: never, the
    handle keeps the version it opened).
    """

    def __init__(
        self,
        uri: str,
        dims: int,
        name: str = "memories",
        *,
        read_consistency_s: float | None = 1.0,
    ) -> None:
        interval = None if read_consistency_s is None else timedelta(seconds=read_consistency_s)
        self.db = lancedb.connect(uri, read_consistency_interval=interval)
        self.dims = dims
        existing = set(self.db.list_tables().tables)
        if name in existing:
            self.table = self.db.open_table(name)
            stored = self.table.schema.field("vector").type.list_size
            if stored != dims:
                raise ConfigurationError(
                    f"memory table {name!r} holds {stored}-d vectors; the embedder gives {dims}-d"
                )
        else:
            self.table = self.db.create_table(name, schema=memory_schema(dims))
        relations = f"{name}_relations"
        self.relations = (
            self.db.open_table(relations)
            if relations in existing
            else self.db.create_table(relations, schema=RELATION_SCHEMA)
        )
        self._fts_version: int | None = None  # table version the FTS index was built at

    # -- writes ---------------------------------------------------------------------------

    def upsert(self, rows: Sequence[dict[str, Any]]) -> None:
        """Insert or replace rows by id (idempotent)."""
        if not rows:
            return
        data = pa.Table.from_pylist(list(rows), schema=self.table.schema)
        self.table.merge_insert(
            "id"
        ).when_matched_update_all().when_not_matched_insert_all().execute(data)

    def relate(self, src: str, dst: str, kind: str, confidence: float, reason: str) -> None:
        """Record ``src --kind--> dst`` (idempotent)."""
        row = {
            "id": f"{src}|{kind}|{dst}",
            "src": src,
            "dst": dst,
            "type": kind,
            "confidence": confidence,
            "reason": reason,
            "created_at": time.time(),
        }
        data = pa.Table.from_pylist([row], schema=RELATION_SCHEMA)
        self.relations.merge_insert(
            "id"
        ).when_matched_update_all().when_not_matched_insert_all().execute(data)

    def touch(self, ids: Iterable[str], now: float) -> None:
        """Retrieval bumps access count and last access."""
        ids = list(ids)
        if ids:
            fresh = self._fts_version == self.table.version
            self.table.update(
                where=f"id IN ({', '.join(_quote(i) for i in ids)})",
                values_sql={"access_count": "access_count + 1", "last_access_at": str(now)},
            )
            if fresh:  # access statistics do not change what full-text search finds
                self._fts_version = self.table.version

    # -- reads ----------------------------------------------------------------------------

    def get(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        """Rows by id (any order; missing ids are absent)."""
        if not ids:
            return []
        where = f"id IN ({', '.join(_quote(i) for i in ids)})"
        return self.table.search().where(where).limit(len(ids)).to_list()

    def neighbours(
        self, vector: np.ndarray, scope: str, limit: int, column: str = "vector"
    ) -> list[tuple[dict[str, Any], float]]:
        """Live rows of ``scope`` nearest to ``vector`` with their cosine similarity."""
        if self.table.count_rows() == 0:
            return []
        rows = (
            self.table.search(vector.tolist(), vector_column_name=column)
            .metric("cosine")
            .where(f"scope = {_quote(scope)} AND deleted = false", prefilter=True)
            .limit(limit)
            .to_list()
        )
        return [(row, 1.0 - float(row["_distance"])) for row in rows]

    def full_text(self, query: str, scope: str, limit: int) -> list[str]:
        """Ids of live rows of ``scope`` matching ``query`` (LanceDB's native FTS), best first."""
        if self.table.count_rows() == 0 or not query.strip():
            return []
        if self._fts_version != self.table.version:  # written since, here or elsewhere
            with warnings.catch_warnings():  # the replacement API takes the column as "metric"
                warnings.simplefilter("ignore")
                self.table.create_fts_index("content", use_tantivy=False, replace=True)
            self._fts_version = self.table.version
        rows = (
            self.table.search(query, query_type="fts")
            .where(f"scope = {_quote(scope)} AND deleted = false", prefilter=True)
            .select(["id", "_score"])
            .limit(limit)
            .to_list()
        )
        return [row["id"] for row in rows]

    def with_entities(self, entities: Sequence[str], scope: str, limit: int) -> list[str]:
        """Ids of live rows of ``scope`` that mention any of ``entities``."""
        if not entities:
            return []
        wanted = ", ".join(_quote(e) for e in entities)
        rows = (
            self.table.search()
            .where(
                f"scope = {_quote(scope)} AND deleted = false AND "
                f"array_has_any(entity_refs, make_array({wanted}))"
            )
            .select(["id"])
            .limit(limit)
            .to_list()
        )
        return [row["id"] for row in rows]

    def relations_of(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        """Relations touching any of ``ids``."""
        if not ids:
            return []
        quoted = ", ".join(_quote(i) for i in ids)
        return (
            self.relations.search()
            .where(f"src IN ({quoted}) OR dst IN ({quoted})")
            .limit(10_000)
            .to_list()
        )

    def columns(self, names: Sequence[str], where: str | None = None) -> pa.Table:
        """A projected scan (for batch ranking and maintenance)."""
        query = self.table.search().select(list(names))
        if where:
            query = query.where(where)
        return query.limit(max(self.table.count_rows(), 1)).to_arrow()

    def count(self, where: str | None = None) -> int:
        """Rows (matching ``where``)."""
        return int(self.table.count_rows(where))
