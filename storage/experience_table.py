"""Task experiences and their generalised patterns in LanceDB (seed 004 §3.1, §3.2).

One row per experience: task metadata and context, the cleaned path with its
slots (JSON), what failed (for negative experiences), the success-rate EMA and
use statistics, and the description's vector. Patterns (the seed's
ExperienceGraph) live in ``<table>_patterns``. Experiences are inserted once by
id (learning the same run again changes nothing, and never resets a success
rate); replays update a row in place. Past ``experience.vector_index_min_rows``
rows maintenance builds a vector index and a scalar index on the description
hash; below that an exact scan is fast enough. Every write is retried after a
lost commit race (:mod:`loopwarden.storage.conflicts`).

Every read can say which LanceDB version of its table it saw (:meth:`ExperienceTable.consistent`),
and a read-only handle (:meth:`ExperienceTable.read_only`) can read a table as it was at
such a version (:meth:`ExperienceTable.pin`): that is how an audit replays advice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
from lancedb.index import BTree, IvfHnswSq

from loopwarden.errors import ConfigurationError
from loopwarden.schemas import codec
from loopwarden.storage.conflicts import retry_on_conflict
from loopwarden.storage.lancedb_tables import connect, open_or_create, open_vector_table
from loopwarden.storage.memory_schema import quote

JSON_COLUMNS = ("device_info", "steps", "slots", "avoid", "dropped")
CONSISTENT_READ_TRIES = 3
T = TypeVar("T")


def experience_schema(dims: int) -> pa.Schema:
    """The experiences table's columns."""
    text, number = pa.string(), pa.float64()
    return pa.schema(
        [
            ("id", text),
            ("loop_id", text),
            ("task_event_id", text),
            ("task_description", text),
            ("description_hash", text),
            ("template", text),
            ("intent", text),
            ("app_name", text),
            ("app_version", text),
            ("device_info", text),
            ("tags", pa.list_(text)),
            ("steps", text),
            ("slots", text),
            ("avoid", text),
            ("outcome", text),
            ("recorded_steps", pa.int64()),
            ("total_steps", pa.int64()),
            ("total_duration_ms", number),
            ("dropped", text),
            ("truncated", pa.bool_()),
            ("success_rate", number),
            ("use_count", pa.int64()),
            ("replay_successes", pa.int64()),
            ("replay_failures", pa.int64()),
            ("feedback_score", number),
            ("created_at", number),
            ("last_used_at", number),
            ("applied_feedback", pa.list_(text)),
            ("size_bytes", pa.int64()),
            ("vector", pa.list_(pa.float32(), dims)),
        ]
    )


PATTERN_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("template", pa.string()),
        ("app_name", pa.string()),
        ("intent", pa.string()),
        ("app_version", pa.string()),
        ("steps", pa.string()),
        ("slot_names", pa.list_(pa.string())),
        ("success_cases", pa.list_(pa.string())),
        ("success_rate", pa.float64()),
        ("updated_at", pa.float64()),
    ]
)


def _encode(row: dict[str, Any], columns: Sequence[str]) -> dict[str, Any]:
    out = dict(row)
    for column in columns:
        if column in out and not isinstance(out[column], str):
            out[column] = codec.dumps(out[column]).decode()
    return out


def _decode(row: dict[str, Any], columns: Sequence[str]) -> dict[str, Any]:
    for column in columns:
        if isinstance(row.get(column), str):
            row[column] = codec.loads(row[column])
    if "vector" in row and row["vector"] is not None:
        row["vector"] = np.asarray(row["vector"], dtype=np.float32)
    return row


class ExperienceTable:
    """The experiences and patterns tables of one LanceDB database."""

    def __init__(
        self,
        uri: str,
        dims: int,
        name: str = "experiences",
        *,
        read_consistency_s: float | None = 1.0,
    ) -> None:
        self.db = connect(uri, read_consistency_s)
        self.dims = dims
        self.schema = experience_schema(dims)
        existing = set(self.db.list_tables().tables)
        self.table = open_vector_table(self.db, name, self.schema, existing, "experience table")
        self.patterns_table = open_or_create(self.db, f"{name}_patterns", PATTERN_SCHEMA, existing)

    @classmethod
    def read_only(cls, uri: str, dims: int, name: str = "experiences") -> ExperienceTable:
        """The stored tables, opened to be read at past versions (:meth:`pin`); nothing is
        created. Raises :class:`ConfigurationError` when ``uri`` holds no such table."""
        self = cls.__new__(cls)
        self.db = connect(uri, None)
        self.dims = dims
        self.schema = experience_schema(dims)
        existing = set(self.db.list_tables().tables)
        missing = [t for t in (name, f"{name}_patterns") if t not in existing]
        if missing:
            raise ConfigurationError(f"no experience table {missing[0]!r} in {uri}")
        self.table = self.db.open_table(name)
        self.patterns_table = self.db.open_table(f"{name}_patterns")
        return self

    def consistent(self, read: Callable[[], T], patterns: bool = False) -> tuple[int, T]:
        """``read()`` and the version of the experiences (``patterns``) table it saw: read
        again while another writer's commit lands between the version and the read."""
        table = self.patterns_table if patterns else self.table
        version = int(table.version)
        for _ in range(CONSISTENT_READ_TRIES):
            result = read()
            after = int(table.version)
            if after == version:
                break
            version = after
        return version, result

    def pin(self, experiences: int | None = None, patterns: int | None = None) -> None:
        """Read the experiences (patterns) table as it was at that version (None: leave it).
        Only on a :meth:`read_only` handle; raises :class:`LookupError` for a version that
        is gone (LanceDB's ``optimize`` cleans up versions older than a week)."""
        for table, version in ((self.table, experiences), (self.patterns_table, patterns)):
            if version is None or table.version == version:
                continue
            try:
                table.checkout(version)
            except ValueError as exc:
                raise LookupError(f"{table.name} version {version} is gone ({exc})") from exc

    # -- writes ---------------------------------------------------------------------------

    def insert_new(self, rows: list[dict[str, Any]], vectors: np.ndarray) -> int:
        """Insert the rows whose id is not stored yet; return how many were new."""
        if not rows:
            return 0
        stored = self.existing([row["id"] for row in rows])
        fresh = [
            (row, vec) for row, vec in zip(rows, vectors, strict=True) if row["id"] not in stored
        ]
        if not fresh:
            return 0
        records = []
        for row, vector in fresh:
            record = _encode(row, JSON_COLUMNS)
            record["size_bytes"] = len(codec.dumps({k: record[k] for k in JSON_COLUMNS}))
            record["vector"] = np.asarray(vector, dtype=np.float32)
            records.append(record)
        data = pa.Table.from_pylist(records, schema=self.schema)
        retry_on_conflict(
            lambda: self.table.merge_insert("id").when_not_matched_insert_all().execute(data),
            "experience insert",
        )
        return len(fresh)

    def update(self, experience_id: str, values: dict[str, Any]) -> None:
        """Set columns of one experience."""
        where = f"id = {quote(experience_id)}"
        retry_on_conflict(
            lambda: self.table.update(where=where, values=values), "experience update"
        )

    def delete(self, where: str) -> None:
        """Delete the experiences ``where`` selects (an SQL filter)."""
        retry_on_conflict(lambda: self.table.delete(where), "experience delete")

    def replace_patterns(self, patterns: list[dict[str, Any]], now: float) -> None:
        """The patterns become exactly ``patterns`` (added, changed, and gone ones removed)."""
        records = [{**_encode(p, ("steps",)), "updated_at": now} for p in patterns]
        data = pa.Table.from_pylist(records, schema=PATTERN_SCHEMA)
        retry_on_conflict(
            lambda: (
                self.patterns_table.merge_insert("id")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .when_not_matched_by_source_delete()
                .execute(data)
            ),
            "pattern update",
        )

    # -- reads ----------------------------------------------------------------------------

    def count(self, where: str | None = None) -> int:
        """Rows (``where``: an SQL filter)."""
        return int(self.table.count_rows(where))

    def existing(self, ids: list[str]) -> set[str]:
        """Which of ``ids`` are stored."""
        if not ids:
            return set()
        where = "id IN (" + ", ".join(quote(i) for i in ids) + ")"
        found = self.table.search().where(where).select(["id"]).limit(len(ids)).to_list()
        return {row["id"] for row in found}

    def get(self, experience_id: str) -> dict[str, Any] | None:
        """One experience, or None."""
        rows = self.where(f"id = {quote(experience_id)}", limit=1)
        return rows[0] if rows else None

    def where(self, where: str, limit: int = 100, vectors: bool = False) -> list[dict[str, Any]]:
        """Experiences an SQL filter selects."""
        query = self.table.search().where(where).limit(limit)
        if not vectors:
            query = query.select([f.name for f in self.schema if f.name != "vector"])
        return [_decode(row, JSON_COLUMNS) for row in query.to_list()]

    def nearest(
        self, vector: np.ndarray, k: int, where: str | None = None
    ) -> list[tuple[dict[str, Any], float]]:
        """The ``k`` experiences nearest to ``vector`` with their cosine, best first."""
        query = self.table.search(vector).distance_type("cosine").limit(k)
        if where:
            query = query.where(where, prefilter=True)
        columns = [f.name for f in self.schema if f.name != "vector"]
        rows = query.select([*columns, "_distance"]).to_list()
        return [(_decode(row, JSON_COLUMNS), 1.0 - float(row.pop("_distance"))) for row in rows]

    def all(self, columns: list[str] | None = None) -> list[dict[str, Any]]:
        """Every experience (``columns``: a subset), for maintenance and listings."""
        data = self.table.to_arrow() if columns is None else self.table.to_arrow().select(columns)
        return [_decode(row, JSON_COLUMNS) for row in data.to_pylist()]

    def patterns(self) -> list[dict[str, Any]]:
        """Every generalised pattern."""
        return [_decode(row, ("steps",)) for row in self.patterns_table.to_arrow().to_pylist()]

    # -- upkeep ---------------------------------------------------------------------------

    def ensure_indexes(self, min_rows: int) -> list[str]:
        """Build the vector and description-hash indexes once the table holds ``min_rows``
        rows and has none; fold new rows into them. Returns what was built."""
        count = self.count()
        if count < min_rows:
            return []
        indexed = {column for config in self.table.list_indices() for column in config.columns}
        built = []
        if "description_hash" not in indexed:
            retry_on_conflict(
                lambda: self.table.create_index("description_hash", config=BTree(), replace=True),
                "experience hash index",
            )
            built.append("description_hash")
        if "vector" not in indexed:
            partitions = max(1, count // 4096)
            retry_on_conflict(
                lambda: self.table.create_index(
                    "vector", config=IvfHnswSq("cosine", partitions), replace=True
                ),
                "experience vector index",
            )
            built.append("vector")
        if not built:
            retry_on_conflict(lambda: self.table.optimize(), "experience optimize")
        return built
