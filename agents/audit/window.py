"""Which records of a partition are inside an audited range.

A range is given by offsets (``[start, end)``), by time (record timestamps in
``[since, until)``, with Kafka's ListOffsets semantics: the range starts at the
first record stamped at or after ``since`` and ends at the first stamped at or
after ``until``), by both, or not at all (the whole partition). Records before
the range are history: replayed to rebuild state, their outputs not compared.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Place(Enum):
    """Where a record lies relative to the range."""

    BEFORE = "before"
    INSIDE = "inside"
    AFTER = "after"


@dataclass(slots=True)
class PartitionWindow:
    """The range of one partition; :meth:`place` is called in offset order."""

    start: int | None = None
    end: int | None = None
    since_ms: int | None = None
    until_ms: int | None = None
    _entered: bool = False
    _left: bool = False

    def place(self, offset: int, timestamp_ms: int) -> Place:
        """BEFORE, INSIDE or AFTER the range (sticky once the time range began or ended)."""
        if self._left or (self.end is not None and offset >= self.end):
            return Place.AFTER
        if self.start is not None and offset < self.start:
            return Place.BEFORE
        if self.until_ms is not None and timestamp_ms >= self.until_ms:
            self._left = True
            return Place.AFTER
        if not self._entered:
            if self.since_ms is not None and timestamp_ms < self.since_ms:
                return Place.BEFORE
            self._entered = True
        return Place.INSIDE
