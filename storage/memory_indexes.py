"""The memory tables' LanceDB indexes: which exist, when they are built, when folded in.

- scalar indexes — ``id`` (B-tree: upserts and look-ups by id), ``scope`` and
  ``deleted`` (bitmaps: every query filters on them), ``entity_refs`` (label
  list: entity recall) — and the relations' ``src``/``dst`` B-trees are built
  with the first rows (milliseconds);
- the full-text index on ``content`` too (ICU word boundaries, so Chinese is
  split into words): it is never rebuilt for a write, since LanceDB searches rows
  written after the index exactly and merges the results;
- the vector index (IVF_SQ by default, cosine) once the table holds
  ``vector_min_rows``, retrained on more partitions when the table has grown
  ``retrain_growth`` times since it was trained (or since this process opened it);
- every ``optimize_every_rows`` rows written, ``optimize`` folds the new rows into
  every index, compacts small files and drops versions older than
  ``keep_versions_s``; a fold adds a segment to the vector index, and past
  ``max_vector_segments`` it is retrained into one.

Upkeep is ``inline`` (the writer builds what is due after its write: libraries,
``loopwarden memory import``) or ``background`` (writers only count; a worker's
memory leader calls :meth:`MemoryIndexes.keep` on a timer, outside the write
lock, so the stream keeps flowing through a retrain). Builds that lose a commit
race to another writer are retried, and a missing index another process built
meanwhile is not built twice. Index work is logged with its duration.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import time
from datetime import timedelta
from typing import Any, Literal

from lancedb.index import FTS, Bitmap, BTree, IvfHnswSq, IvfPq, IvfSq, LabelList

from loopwarden.settings import MemoryIndexSettings
from loopwarden.storage.conflicts import retry_on_conflict

log = logging.getLogger(__name__)
# index statistics without the centroids (the coming default; also silences Lance's warning)
os.environ.setdefault("LANCE_INCLUDE_VECTOR_CENTROIDS", "false")

MEMORY_SCALARS = (("id", BTree), ("scope", Bitmap), ("deleted", Bitmap))
ENTITY_INDEX = ("entity_refs", LabelList)
RELATION_SCALARS = (("src", BTree), ("dst", BTree))
VECTOR_COLUMN = "vector"
FTS_COLUMN = "content"
FTS_TOKENIZER = "icu"
INDEX_LIST_TTL_S = 60.0  # ICU word boundaries: Chinese and Japanese text split into words


def _indexed_columns(table: Any) -> dict[str, Any]:
    return {column: config for config in table.list_indices() for column in config.columns}


class MemoryIndexes:
    """Keeps the indexes of a memories table and its relations table up to date."""

    def __init__(
        self,
        memories: Any,
        relations: Any,
        settings: MemoryIndexSettings,
        *,
        upkeep: Literal["inline", "background"] = "inline",
    ) -> None:
        self.memories = memories
        self.relations = relations
        self.cfg = settings
        self.upkeep = upkeep
        self._upkeep_lock = threading.Lock()  # one build or optimize at a time per process
        self.rows_since_optimize = 0
        self.seconds = 0.0  # spent building and folding indexes in this process
        self._columns: dict[str, Any] | None = None
        self._listed_at = 0.0
        self._trained_rows: int | None = None  # rows the vector index was trained on
        self._relations_indexed = False

    # -- state ----------------------------------------------------------------------------

    def _indexed(self) -> dict[str, Any]:
        """The memories' indexes by column, re-listed after a build here and at least
        every ``INDEX_LIST_TTL_S`` (another process may have built one)."""
        if self._columns is None or time.monotonic() - self._listed_at > INDEX_LIST_TTL_S:
            self._columns = _indexed_columns(self.memories)
            self._listed_at = time.monotonic()
        return self._columns

    @property
    def has_vector_index(self) -> bool:
        """Whether vector queries go through an ANN index (else exact scans)."""
        return VECTOR_COLUMN in self._indexed()

    def status(self) -> list[dict[str, Any]]:
        """One entry per index: name, type, column, indexed and unindexed rows."""
        result = []
        for table in (self.memories, self.relations):
            for config in table.list_indices():
                stats = table.index_stats(config.name)
                result.append(
                    {
                        "table": table.name,
                        "index": config.name,
                        "type": stats.index_type,
                        "columns": list(config.columns),
                        "indexed_rows": stats.num_indexed_rows,
                        "unindexed_rows": stats.num_unindexed_rows,
                    }
                )
        return result

    # -- upkeep ---------------------------------------------------------------------------

    def note_rewritten(self, rows: int) -> None:
        """Rows an update rewrote: LanceDB stores them anew, outside the indexes,
        until the next :meth:`optimize` (the writer's or the maintenance cycle's)."""
        self.rows_since_optimize += rows

    def after_write(self, rows: int) -> None:
        """Called after ``rows`` rows were written: inline, build what is due."""
        self.rows_since_optimize += rows
        if self.upkeep != "inline":
            return
        self.ensure()
        if self.rows_since_optimize >= self.cfg.optimize_every_rows:
            self.optimize()
        else:
            self.compact_relations()

    def unindexed_rows(self) -> int:
        """Rows outside the ``id`` index, whoever wrote them (0 before it exists)."""
        config = self._indexed().get("id")
        if config is None:
            return 0
        stats = self.memories.index_stats(config.name)
        return int(stats.num_unindexed_rows) if stats else 0

    def keep(self) -> dict[str, Any]:
        """Background upkeep: build what the table's size calls for, and fold in and
        compact once ``optimize_every_rows`` rows are outside the indexes (counted by
        LanceDB, so rows other processes wrote count too). Returns what it did."""
        started = self.seconds
        self.ensure()
        unindexed = self.unindexed_rows()
        folded = max(unindexed, self.rows_since_optimize) >= self.cfg.optimize_every_rows
        if folded:
            self.optimize()
        compacted = not folded and self.compact_relations()
        return {
            "unindexed_rows": unindexed,
            "folded": folded,
            "relations_compacted": compacted,
            "seconds": self.seconds - started,
        }

    def compact_relations(self) -> bool:
        """Compact the relations table (and drop its versions older than
        ``keep_versions_s``) once it holds ``relation_max_fragments`` fragments."""
        fragments = self.relations.stats()["fragment_stats"]["num_fragments"]
        if fragments < self.cfg.relation_max_fragments:
            return False
        keep = timedelta(seconds=self.cfg.keep_versions_s)
        with self._upkeep_lock:
            what = f"compact {fragments} relation fragments"
            self._timed(
                what,
                retry_on_conflict,
                lambda: self.relations.optimize(cleanup_older_than=keep),
                what,
            )
        return True

    def ensure(self) -> None:
        """Create every index the tables' size calls for and that does not exist yet."""
        with self._upkeep_lock:
            self._ensure()

    def _ensure(self) -> None:
        count = self.memories.count_rows()
        if count == 0:
            return
        indexed = self._indexed()
        for column, kind in (*MEMORY_SCALARS, ENTITY_INDEX):
            if column not in indexed:
                what = f"{kind.__name__} index on {column}"
                self._build(what, column, self._scalar, self.memories, column, kind)
        if FTS_COLUMN not in indexed:
            self._build("full-text index on content", FTS_COLUMN, self._full_text)
        elif indexed[FTS_COLUMN].index_details.get("base_tokenizer") != FTS_TOKENIZER:
            what = f"full-text index rebuilt with the {FTS_TOKENIZER} tokenizer"
            self._build(what, None, self._full_text)
        if not self._relations_indexed and self.relations.count_rows():
            present = _indexed_columns(self.relations)
            for column, kind in RELATION_SCALARS:
                if column not in present:
                    retry_on_conflict(
                        functools.partial(self._scalar, self.relations, column, kind),
                        f"{kind.__name__} index on relations.{column}",
                    )
            self._relations_indexed = True
        if VECTOR_COLUMN not in indexed and count >= self.cfg.vector_min_rows:
            self._build(f"vector index over {count} rows", VECTOR_COLUMN, self._vector, count)
        elif VECTOR_COLUMN in indexed:
            if self._trained_rows is None:  # built before this process opened the table
                stats = self.memories.index_stats(indexed[VECTOR_COLUMN].name)
                self._trained_rows = max(stats.num_indexed_rows if stats else count, 1)
            if count >= self.cfg.retrain_growth * self._trained_rows:
                what = f"vector index retrained over {count} rows"
                self._build(what, None, self._vector, count)

    def optimize(self) -> None:
        """Fold unindexed rows into the indexes, compact files, drop old versions."""
        with self._upkeep_lock:
            self._ensure()
            keep = timedelta(seconds=self.cfg.keep_versions_s)
            for table in (self.memories, self.relations):
                what = f"optimize {table.name}"
                self._timed(
                    what,
                    retry_on_conflict,
                    lambda t=table: t.optimize(cleanup_older_than=keep),
                    what,
                )
            self.rows_since_optimize = 0
            self._columns = None
            segments = self.vector_segments()
            if segments > self.cfg.max_vector_segments:
                count = self.memories.count_rows()
                what = f"vector index of {segments} segments retrained over {count} rows"
                self._build(what, None, self._vector, count)

    def vector_segments(self) -> int:
        """Segments of the vector index (one per fold since it was trained; 0: none)."""
        config = self._indexed().get(VECTOR_COLUMN)
        if config is None:
            return 0
        stats = self.memories.index_stats(config.name)
        return int(getattr(stats, "num_indices", None) or 1) if stats else 0

    def prewarm(self) -> None:
        """Load every index of the memories table into LanceDB's cache (about 1 s at
        1M rows), so the first queries do not pay for reading index pages."""
        for config in self.memories.list_indices():
            self.memories.prewarm_index(config.name)

    # -- builders -------------------------------------------------------------------------

    def _scalar(self, table: Any, column: str, kind: Any) -> None:
        table.create_index(column, config=kind(), replace=True)

    def _full_text(self) -> None:
        self.memories.create_index(
            FTS_COLUMN, config=FTS(base_tokenizer=FTS_TOKENIZER), replace=True
        )

    def _vector(self, count: int) -> None:
        partitions = max(1, count // self.cfg.rows_per_partition)
        config: Any
        if self.cfg.vector_index_type == "IVF_PQ":
            dims = self.memories.schema.field(VECTOR_COLUMN).type.list_size
            config = IvfPq("cosine", partitions, num_sub_vectors=max(1, dims // 16))
        elif self.cfg.vector_index_type == "IVF_HNSW_SQ":
            config = IvfHnswSq("cosine", partitions)
        else:
            config = IvfSq("cosine", partitions)
        self.memories.create_index(VECTOR_COLUMN, config=config, replace=True)
        self._trained_rows = count

    def _build(self, what: str, missing: str | None, build: Any, *args: Any) -> None:
        """Build an index, again after a lost commit race; when ``missing`` (a column
        without an index) is indexed meanwhile by another writer, it is not rebuilt."""

        attempts = 0

        def attempt() -> None:
            nonlocal attempts
            attempts += 1
            if attempts > 1 and missing is not None:
                self._columns = None  # list again: the winner of the race may have built it
                if missing in self._indexed():
                    log.info("memory store: %s built by another writer", what)
                    return
            build(*args)

        self._timed(what, retry_on_conflict, attempt, what)

    def _timed(self, what: str, build: Any, *args: Any, **kwargs: Any) -> None:
        started = time.perf_counter()
        try:
            build(*args, **kwargs)
        finally:
            self._columns = None  # list the indexes again (also after a lost race)
        elapsed = time.perf_counter() - started
        self.seconds += elapsed
        log.info("memory store: %s in %.2f s", what, elapsed)
