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
compaction), the hashes are read again from the table — or, for a batch too small
to pay for that, the batch is looked up by query as before. The answer is
therefore never staler than the query's: both read the version LanceDB's read
consistency interval lets the handle see.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

MERGE_EVERY = 50_000
"""Appended hashes kept in a set before they are merged into the sorted array."""


class KnownIds:
    """The ids of one LanceDB table as of ``version`` (see the module docstring).

    ``rebuild_share``: a batch of at least ``max(rebuild_min, rows × rebuild_share)``
    ids pays for reading the table's ids again when they are out of date; a smaller
    batch is looked up by query.
    """

    def __init__(self, rebuild_min: int = 1000, rebuild_share: float = 0.01) -> None:
        self.rebuild_min = rebuild_min
        self.rebuild_share = rebuild_share
        self.version: int | None = None
        self._sorted = np.empty(0, dtype=np.int64)
        self._recent: set[int] = set()
        self.rebuilds = 0

    def stored(
        self, table: Any, ids: Sequence[str], lookup: Callable[[Sequence[str]], set[str]]
    ) -> set[str]:
        """Those of ``ids`` that ``table`` holds; ``lookup`` answers by query."""
        if not ids:
            return set()
        version = table.version
        if version != self.version:
            if len(ids) < max(self.rebuild_min, table.count_rows() * self.rebuild_share):
                return lookup(ids)
            self._rebuild(table, version)
        held = self._held([hash(memory_id) for memory_id in ids])
        maybe = [memory_id for memory_id, hit in zip(ids, held.tolist(), strict=True) if hit]
        return lookup(maybe) if maybe else set()

    def appended(self, ids: Sequence[str], version: int) -> None:
        """This process appended ``ids`` in the commit that made ``version``: kept when
        that commit directly follows the version the hashes reflect (else they are out
        of date, and read again when next needed)."""
        if self.version is None or version != self.version + 1:
            self.version = None
            return
        self._recent.update(map(hash, ids))
        self.version = version
        if len(self._recent) >= MERGE_EVERY:
            merged = np.fromiter(self._recent, dtype=np.int64, count=len(self._recent))
            self._sorted = np.union1d(self._sorted, merged)
            self._recent.clear()

    def _rebuild(self, table: Any, version: int) -> None:
        # the version is read before the ids: a commit in between only adds hashes
        # (extra look-ups), it never leaves a stored id out
        ids = table.search().select(["id"]).limit(None).to_arrow().column("id").to_pylist()
        self._sorted = np.unique(np.fromiter(map(hash, ids), dtype=np.int64, count=len(ids)))
        self._recent.clear()
        self.version = version
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
