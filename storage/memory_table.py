"""Memories and their relations in LanceDB (a local directory or any LanceDB URI).

One row per memory (content, tags, questions, entities, the seven C.O.R.E.
P.A.C.T. scores, trust and its evidence counts, access statistics, layer, soft
delete flag, content and question vectors); relations (``contradicts``,
``supersedes``) in a second table. Writes are idempotent upserts keyed by id,
built as Arrow columns (vectors straight from numpy). Indexes: see
:mod:`loopwarden.storage.memory_indexes`.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from lancedb.query import MatchQuery

from loopwarden.settings import MemoryIndexSettings
from loopwarden.storage.conflicts import retry_on_conflict
from loopwarden.storage.known_ids import KnownIds
from loopwarden.storage.lancedb_tables import connect, open_or_create, open_vector_table
from loopwarden.storage.memory_indexes import MemoryIndexes
from loopwarden.storage.memory_schema import (
    RELATION_SCHEMA,
    STATE_SCHEMA,
    UPDATE_CHUNK,
    arrow_rows,
    memory_schema,
    quote,
    quote_list,
    rows_to_arrow,
    with_cards,
)


class MemoryTable:
    """The memories and relations tables of one LanceDB database.

    ``read_consistency_s``: how stale a read may be with respect to writes made by
    other processes (an analyst group, ``loopwarden memory``): LanceDB checks for a
    newer table version at most that often (0: on every read; None: never, the
    handle keeps the version it opened). ``upkeep``: see
    :mod:`loopwarden.storage.memory_indexes`. Every write is retried when it loses a
    commit race to another writer (:mod:`loopwarden.storage.conflicts`).
    """

    def __init__(
        self,
        uri: str,
        dims: int,
        name: str = "memories",
        *,
        read_consistency_s: float | None = 1.0,
        indexes: MemoryIndexSettings | None = None,
        upkeep: Literal["inline", "background"] = "inline",
    ) -> None:
        self.db = connect(uri, read_consistency_s)
        self.dims = dims
        existing = set(self.db.list_tables().tables)
        self.table = open_vector_table(self.db, name, memory_schema(dims), existing, "memory table")
        if "card" not in self.table.schema.names:  # a store from before cards: rows it
            # already holds keep no card (searches read their columns), new rows get one
            retry_on_conflict(self._add_card_column, "add the card column")
        self.relations = open_or_create(self.db, f"{name}_relations", RELATION_SCHEMA, existing)
        self.state_table = open_or_create(self.db, f"{name}_state", STATE_SCHEMA, existing)
        self.index_settings = indexes or MemoryIndexSettings()
        self.indexes = MemoryIndexes(self.table, self.relations, self.index_settings, upkeep=upkeep)
        self.known_ids = KnownIds()

    def _add_card_column(self) -> None:
        if "card" not in self.table.schema.names:  # again after a lost race
            self.table.add_columns(pa.field("card", pa.binary()))

    # -- writes ---------------------------------------------------------------------------

    def upsert(self, rows: Sequence[dict[str, Any]]) -> None:
        """Insert or replace rows by id (idempotent)."""
        if not rows:
            return
        self.upsert_arrow(rows_to_arrow(rows, self.table.schema))

    def set_column(self, ids: pa.Array, column: str, value: Any) -> None:
        """Set ``column`` to ``value`` in the rows ``ids`` (SQL updates of 10,000 ids).

        Not a partial ``merge_insert``: at 1M rows that read the whole table (25 s
        and 10 GB for 24 rows, against 0.5 s here).
        """
        values = ids.to_pylist()
        for start in range(0, len(values), UPDATE_CHUNK):
            chunk = values[start : start + UPDATE_CHUNK]
            where = f"id IN ({quote_list(chunk)})"
            retry_on_conflict(
                functools.partial(self.table.update, where=where, values={column: value}),
                f"update of {column}",
            )
        self.indexes.note_rewritten(len(values))

    def state(self, key: str) -> tuple[float, str] | None:
        """A bookkeeping value: (number, text), or None."""
        rows = self.state_table.search().where(f"key = {quote(key)}").limit(1).to_list()
        return (rows[0]["number"], rows[0]["text"]) if rows else None

    def set_state(self, key: str, value: tuple[float, str] | None) -> None:
        """Store (or with None, forget) a bookkeeping value."""
        if value is None:
            retry_on_conflict(lambda: self.state_table.delete(f"key = {quote(key)}"), "state")
            return
        row = pa.Table.from_pylist(
            [{"key": key, "number": value[0], "text": value[1]}], schema=STATE_SCHEMA
        )
        retry_on_conflict(
            lambda: (
                self.state_table.merge_insert("key")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .execute(row)
            ),
            "state",
        )

    def update_columns(self, rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> None:
        """Set ``columns`` of stored rows (by id) to the values in ``rows``.

        The stored rows are read whole, changed and merged back whole: a
        ``merge_insert`` of some columns only reads the entire table.
        """
        if not rows:
            return

        def read_change_merge() -> int:  # again whole after a lost race: it re-reads
            stored = {row["id"]: row for row in self.get([row["id"] for row in rows])}
            for row in rows:
                if row["id"] in stored:
                    stored[row["id"]].update({c: row[c] for c in columns})
            if stored:
                data = rows_to_arrow(list(stored.values()), self.table.schema)
                self.table.merge_insert("id").when_matched_update_all().execute(data)
            return len(stored)

        self.indexes.note_rewritten(retry_on_conflict(read_change_merge, "evidence update"))

    def upsert_arrow(self, data: pa.Table) -> None:
        """Insert or replace whole rows by id from an Arrow table of the memory schema.

        Ids not stored yet are appended (LanceDB's bulk path); only rows replacing
        stored ones go through ``merge_insert``. One writer per scope (the memory
        topic is keyed by scope) keeps the look-up and the append consistent.
        """
        if data.num_rows == 0:
            return
        data = with_cards(data)
        ids = data.column("id")
        if len(pc.unique(ids)) != data.num_rows:
            raise ValueError("an upsert batch holds the same memory id twice")
        stored = self.existing_ids(ids.to_pylist())
        if stored:
            replacing = pc.is_in(ids, value_set=pa.array(sorted(stored)))
            replacements = data.filter(replacing)
            retry_on_conflict(
                lambda: (
                    self.table.merge_insert("id").when_matched_update_all().execute(replacements)
                ),
                "upsert",
            )
            self.indexes.note_rewritten(len(stored))
            data = data.filter(pc.invert(replacing))
        self._add(data)

    def append(self, data: pa.Table) -> None:
        """Append rows whose ids the caller has just found not stored (no look-up)."""
        self._add(with_cards(data) if data.num_rows else data)

    def _add(self, data: pa.Table) -> None:
        """Append rows that already carry their cards."""
        if data.num_rows:
            added = retry_on_conflict(lambda: self.table.add(data), "append")
            ids = data.column("id")
            self.known_ids.appended(data.num_rows, added.version, ids.to_pylist)
        self.indexes.after_write(data.num_rows)

    def relate_many(self, relations: Sequence[tuple[str, str, str, float, str]]) -> None:
        """Record ``(src, dst, kind, confidence, reason)`` relations at once (idempotent)."""
        if not relations:
            return
        now = time.time()
        rows = {
            f"{src}|{kind}|{dst}": {
                "id": f"{src}|{kind}|{dst}",
                "src": src,
                "dst": dst,
                "type": kind,
                "confidence": confidence,
                "reason": reason,
                "created_at": now,
            }
            for src, dst, kind, confidence, reason in relations
        }
        data = pa.Table.from_pylist(list(rows.values()), schema=RELATION_SCHEMA)
        retry_on_conflict(
            lambda: (
                self.relations.merge_insert("id")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .execute(data)
            ),
            "relations",
        )

    def touch(self, ids: Iterable[str], now: float) -> None:
        """Retrieval bumps access count and last access."""
        ids = list(ids)
        if ids:
            retry_on_conflict(
                lambda: self.table.update(
                    where=f"id IN ({quote_list(ids)})",
                    values_sql={"access_count": "access_count + 1", "last_access_at": str(now)},
                ),
                "access update",
            )
            self.indexes.note_rewritten(len(ids))

    # -- reads ----------------------------------------------------------------------------

    def get(self, ids: Sequence[str], columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """Rows by id (any order; missing ids are absent), vectors as numpy arrays."""
        if not ids:
            return []
        query = self.table.search().where(f"id IN ({quote_list(ids)})").limit(len(ids))
        if columns is not None:
            query = query.select(list(columns))
        return arrow_rows(query.to_arrow())

    def _vector_query(self, query: Any, column: str, scope: str, limit: int, exact: bool) -> Any:
        search = (
            self.table.search(query, vector_column_name=column)
            .metric("cosine")
            .where(f"scope = {quote(scope)} AND deleted = false", prefilter=True)
            .limit(limit)
        )
        if exact:
            return search.bypass_vector_index()
        if column == "vector" and self.indexes.has_vector_index:
            cfg = self.index_settings
            search = search.nprobes(cfg.nprobes).refine_factor(cfg.refine_factor)
        return search

    def take(self, row_ids: dict[str, int], columns: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Rows by the ``_rowid`` a query of this table returned, keyed by id.

        Row ids move when files are compacted: a row that comes back with another
        id (or not at all) is fetched by id instead.
        """
        if not row_ids:
            return {}
        wanted = list(dict.fromkeys(("id", *columns)))
        taken = self.table.take_row_ids(list(row_ids.values())).select(wanted).to_arrow()
        rows = {row["id"]: row for row in arrow_rows(taken) if row["id"] in row_ids}
        moved = [memory_id for memory_id in row_ids if memory_id not in rows]
        rows.update((row["id"], row) for row in self.get(moved, columns=wanted))
        return rows

    def existing_ids(self, ids: Sequence[str]) -> set[str]:
        """Those of ``ids`` that are stored (live or not): by the ids this process
        knows (:mod:`loopwarden.storage.known_ids`), by query where they may be."""
        return self.known_ids.stored(self.table, ids, self._query_ids)

    def _query_ids(self, ids: Sequence[str]) -> set[str]:
        if not ids:
            return set()
        rows = (
            self.table.search()
            .where(f"id IN ({quote_list(ids)})")
            .select(["id"])
            .limit(len(ids))
            .to_arrow()
        )
        return set(rows.column("id").to_pylist())

    def neighbours(
        self,
        vector: np.ndarray,
        scope: str,
        limit: int,
        column: str = "vector",
        *,
        exact: bool = False,
        columns: Sequence[str] | None = None,
        row_ids: bool = False,
    ) -> list[tuple[dict[str, Any], float]]:
        """Live rows of ``scope`` nearest to ``vector`` with their cosine similarity
        (only ``columns`` of them when given; ``_rowid`` too with ``row_ids``).

        Through the vector index once there is one, unless ``exact``.
        """
        if self.table.count_rows() == 0:
            return []
        search = self._vector_query(vector.tolist(), column, scope, limit, exact)
        if columns is not None:
            search = search.select([*columns, "_distance"])
        if row_ids:
            search = search.with_row_id(True)
        rows = arrow_rows(search.to_arrow())
        return [(row, 1.0 - float(row["_distance"])) for row in rows]

    def neighbours_many(
        self,
        vectors: np.ndarray,
        scope: str,
        limit: int,
        columns: Sequence[str] | None = None,
        *,
        row_ids: bool = False,
    ) -> list[list[tuple[dict[str, Any], float]]]:
        """:meth:`neighbours` of each row of ``vectors``, one query each.

        Not LanceDB's multi-vector query: that took 8 s and 10 GB for ten vectors at
        1M rows with an IVF_SQ index, where ten single queries take about 0.12 s.
        Nor two at a time: LanceDB already uses both cores, and two threads made
        each query twice as slow (200 queries: 5.1 s against 2.4 s one by one).
        """
        if len(vectors) == 0 or self.table.count_rows() == 0:
            return [[] for _ in range(len(vectors))]
        return [
            self.neighbours(vector, scope, limit, columns=columns, row_ids=row_ids)
            for vector in vectors
        ]

    def full_text(
        self,
        query: str,
        scope: str,
        limit: int,
        columns: Sequence[str] = ("id",),
        *,
        row_ids: bool = False,
    ) -> list[dict[str, Any]]:
        """Live rows of ``scope`` matching ``query`` (LanceDB's native FTS), best first."""
        if self.table.count_rows() == 0 or not query.strip():
            return []
        self.indexes.ensure()  # a table written before indexes existed gets them now
        search = (  # a MatchQuery: the user's text is words, never query syntax
            # lancedb's MatchQuery has defaults its annotations do not show
            self.table.search(MatchQuery(query, "content"), query_type="fts")  # type: ignore[call-arg]
            .where(f"scope = {quote(scope)} AND deleted = false", prefilter=True)
            .select([*columns, "_score"])
            .limit(limit)
        )
        return arrow_rows(search.with_row_id(row_ids).to_arrow())

    def with_entities(
        self,
        entities: Sequence[str],
        scope: str,
        limit: int,
        columns: Sequence[str] = ("id",),
        *,
        row_ids: bool = False,
    ) -> list[dict[str, Any]]:
        """Live rows of ``scope`` that mention any of ``entities``."""
        if not entities:
            return []
        search = (
            self.table.search()
            .where(
                f"scope = {quote(scope)} AND deleted = false AND "
                f"array_has_any(entity_refs, make_array({quote_list(entities)}))"
            )
            .select(list(columns))
            .limit(limit)
        )
        return arrow_rows(search.with_row_id(row_ids).to_arrow())

    def relations_of(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        """Relations touching any of ``ids``."""
        if not ids:
            return []
        quoted = quote_list(ids)
        return (
            self.relations.search()
            .where(f"src IN ({quoted}) OR dst IN ({quoted})")
            .limit(10_000)
            .to_list()
        )

    def columns(
        self, names: Sequence[str], where: str | None = None, *, row_ids: bool = False
    ) -> pa.Table:
        """A projected scan (batch ranking, maintenance), with LanceDB's ``_rowid`` when
        ``row_ids`` (see :meth:`ids_of_row_ids`)."""
        query = self.table.search().select(list(names)).with_row_id(row_ids)
        if where:
            query = query.where(where)
        return query.limit(max(self.table.count_rows(), 1)).to_arrow()

    def ids_of_row_ids(self, row_ids: Sequence[int]) -> dict[int, str]:
        """Memory ids by LanceDB row id (a row id compaction moved is left out)."""
        if not row_ids:
            return {}
        taken = self.table.take_row_ids(list(row_ids)).select(["id"]).with_row_id().to_arrow()
        return dict(
            zip(taken.column("_rowid").to_pylist(), taken.column("id").to_pylist(), strict=True)
        )

    def count(self, where: str | None = None) -> int:
        """Rows (matching ``where``)."""
        return int(self.table.count_rows(where))
