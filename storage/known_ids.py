"""Which ids a memory table holds, answered without a query for a bulk load's new ids.

Before rows are appended, their ids are looked up (writes are idempotent by id). A
LanceDB ``id IN (…)`` query costs about 5 ms plus 4 µs an id whatever the table's
size — planning the literal list, not scanning — so on a bulk load the look-up
cost a third as much as the append itself.

:class:`KnownIds` keeps every id of the table as of one table version, as 64-bit
hashes (a sorted array and a set of the ids appended since; 8 bytes an id once
merged). While the table is still at that version, an id whose hash is not there
is not stored, and only the ids whose hash is there (replays, or a rare hash
collision) are looked up. Whenever the table has moved on by a commit that was not
this process's own append (another writer, maintenance, an index build,
compaction), the hashes are read again from the table when that pays for itself —
otherwise the batch is looked up by query as before (see :class:`KnownIds`). The answer is
therefore never staler than the query's: both read the version LanceDB's read
consistency interval lets the handle see.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

MERGE_EVERY = 50_000
"""Appended hashes kept in a set before they are merged into the sorted array."""
REREAD_ROWS_PER_ID = 10
"""Reading a table's ids again costs about as much as looking up one id by query per
this many stored rows (``benchmarks/known_ids.py``, 1M rows with the B-tree on ``id``:
a query 8 µs an id, a reread 0.71 µs a row; without the index a query costs far more)."""


class KnownIds:
    """The ids of one LanceDB table as of ``version`` (see the module docstring).

    When the hashes are out of date, reading them again must pay for itself: it does
    when the ids expected before the next foreign commit (the longest of the last
    run of own appends, the current run and the batch) would cost more by query than
    the reread (``REREAD_ROWS_PER_ID``). The first check of a large table therefore
    queries until the process's own appends make a reread pay (no multi-second read
    of ten million ids for one batch). Under a sustained load at a million rows,
    where index upkeep commits every 50,000 rows, batches are looked up by query; on
    a smaller table, or between rarer foreign commits, by hash. A batch of fewer than
    ``rebuild_min`` ids is always looked up by query.
    """

    def __init__(self, rebuild_min: int = 1000) -> None:
        self.rebuild_min = rebuild_min
        self.version: int | None = None  # the version the hashes reflect (None: none do)
        self._sorted = np.empty(0, dtype=np.int64)
        self._recent: set[int] = set()
        self._seen: int | None = None  # the table's version as this process last knew it
        self._run = 0  # ids appended by this process since the last foreign commit
        self._last_run: int | None = None  # the run before it (None: none seen yet)
        self.rebuilds = 0

    def stored(
        self, table: Any, ids: Sequence[str], lookup: Callable[[Sequence[str]], set[str]]
    ) -> set[str]:
        """Those of ``ids`` that ``table`` holds; ``lookup`` answers by query."""
        if not ids:
            return set()
        version = table.version
        if version != self._seen:  # a commit not this process's own append
            self._foreign_commit(version, appended=0)
        if self.version != version:
            if not self._rereading_pays(len(ids), table):
                return lookup(ids)
            self.reread(table, version)
        held = self._held([hash(memory_id) for memory_id in ids])
        maybe = [memory_id for memory_id, hit in zip(ids, held.tolist(), strict=True) if hit]
        return lookup(maybe) if maybe else set()

    def appended(self, count: int, version: int, ids: Callable[[], Sequence[str]]) -> None:
        """This process appended ``count`` rows in the commit that made ``version``;
        ``ids()`` gives their ids, asked for only when the hashes follow: when that
        commit directly follows the version they reflect (otherwise another commit came
        in between, and they are out of date)."""
        if self._seen is None or version != self._seen + 1:
            self._foreign_commit(version, appended=count)
            return
        self._seen = version
        self._run += count
        if self.version is None or version != self.version + 1:
            return
        self._recent.update(map(hash, ids()))
        self.version = version
        if len(self._recent) >= MERGE_EVERY:
            merged = np.fromiter(self._recent, dtype=np.int64, count=len(self._recent))
            self._sorted = np.union1d(self._sorted, merged)
            self._recent.clear()

    def _foreign_commit(self, version: int, appended: int) -> None:
        if self._seen is not None:
            self._last_run = self._run
        self._seen, self._run, self.version = version, appended, None

    def _rereading_pays(self, batch: int, table: Any) -> bool:
        if batch < self.rebuild_min:
            return False
        expected = max(self._last_run or 0, self._run, batch)
        return expected * REREAD_ROWS_PER_ID >= table.count_rows()

    @property
    def nbytes(self) -> int:
        """Memory held by the merged hashes."""
        return int(self._sorted.nbytes)

    def reread(self, table: Any, version: int) -> None:
        """Read ``table``'s ids as of ``version`` (read before the ids: a commit in
        between only adds hashes, so extra look-ups, never a stored id left out)."""
        ids = table.search().select(["id"]).limit(None).to_arrow().column("id").to_pylist()
        self._sorted = np.unique(np.fromiter(map(hash, ids), dtype=np.int64, count=len(ids)))
        self._recent.clear()
        self.version = self._seen = version
        self.rebuilds += 1

    def _held(self, keys: list[int]) -> np.ndarray:
        """Per hash: is it among the table's? (False: the id is not stored.)"""
        wanted = np.array(keys, dtype=np.int64)
        held = np.zeros(len(keys), dtype=bool)
        if len(self._sorted):
            at = np.minimum(np.searchsorted(self._sorted, wanted), len(self._sorted) - 1)
            held = self._sorted[at] == wanted
        if self._recent:
            recent = self._recent
            held |= np.fromiter((key in recent for key in keys), dtype=bool, count=len(keys))
        return held
