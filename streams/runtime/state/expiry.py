"""Reclaiming the memory of idle loops, per partition.

Whether a loop is idle is *decided* in event time, by the record processors,
when its state is loaded: an event more than the TTL after the loop's last one
starts the loop afresh (see :meth:`RecordProcessor.process`). So a live worker,
a worker catching up, ``loopwarden detect`` and ``loopwarden replay`` take the
same decisions. This module only frees the state of loops that any later event
would start afresh anyway. A loop's state is dropped when its last event is
older than ``ttl + grace`` seconds before

- the newest (trusted) event time on its partition — checked in the stream, at
  most every ``interval`` seconds per partition; or
- the wall clock, once its partition has had no record for ``ttl`` seconds of
  wall time (a quiet partition never advances event time) — checked by a timer.

``grace`` is ``limits.max_clock_skew_s``: only an event that reaches the worker
more than that far behind its partition's newest event (or behind the wall
clock, on a quiet partition) can find its loop already reclaimed, and then be
decided differently than in a replay. Deletions go to the partition's changelog.

Event time comes from producers and is not trusted beyond the record's own
timestamp: :func:`trusted_event_time` caps it at the record's broker timestamp
plus ``limits.max_clock_skew_s``, so one event dated a year ahead cannot advance
a partition's watermark and expire every other loop on it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from loopwarden.schemas import codec


def trusted_event_time(
    event_time: float, record_timestamp_ms: int | None, max_skew_s: float
) -> float:
    """``event_time``, but no later than the record's timestamp plus ``max_skew_s``."""
    if record_timestamp_ms is None:
        return event_time
    return min(event_time, record_timestamp_ms / 1000.0 + max_skew_s)


def snapshot_expiry(data: bytes) -> tuple[int, float]:
    """(partition, updated_at) of a keyed state's table snapshot (its ``p`` and ``ts``:
    a family's, a tool's), for the idle sweep."""
    raw = codec.loads_state(data)
    return raw["p"], raw["ts"]


class IdleLoopSweeper:
    """Tracks last_seen per loop, by partition, and says which loops can be reclaimed.

    A sweep looks at the loops of one partition only, from this index; the table's
    keys are scanned once per partition after it is assigned (to pick up recovered
    state, read with ``peek``), not on every sweep: at a million loops a scan of
    every key cost 0.73 s per sweep.
    """

    def __init__(self, ttl_s: float, interval_s: float, grace_s: float = 0.0) -> None:
        self.ttl_s = ttl_s
        self.interval_s = interval_s
        self.grace_s = grace_s
        self._loops: dict[int, dict[bytes, float]] = {}
        self._partition_of: dict[bytes, int] = {}
        self._scanned: set[int] = set()
        self._watermarks: dict[int, float] = {}
        self._next_sweep: dict[int, float] = {}
        self._last_record: dict[int, float] = {}

    def record_seen(self, partition: int, now_monotonic: float) -> None:
        """A record of ``partition`` was processed now (wall clock)."""
        self._last_record[partition] = now_monotonic

    def quiet_partitions(self, now_monotonic: float) -> list[int]:
        """Partitions without a record for ``ttl`` seconds of wall time (then forgotten)."""
        quiet = [p for p, t in self._last_record.items() if now_monotonic - t >= self.ttl_s]
        for partition in quiet:
            del self._last_record[partition]
        return quiet

    def forget_partitions(self, partitions: set[int]) -> None:
        """Stop tracking partitions this worker no longer owns (or that it is given
        again: their keys are scanned afresh at the next sweep)."""
        for partition in partitions:
            self._last_record.pop(partition, None)
            self._watermarks.pop(partition, None)
            self._next_sweep.pop(partition, None)
            self._scanned.discard(partition)
            for key in self._loops.pop(partition, {}):
                self._partition_of.pop(key, None)

    def touch(self, key: bytes, partition: int, last_seen: float) -> None:
        """Record that a loop was written with event time ``last_seen``."""
        previous = self._partition_of.get(key)
        if previous is not None and previous != partition:
            self._loops.get(previous, {}).pop(key, None)
        self._partition_of[key] = partition
        self._loops.setdefault(partition, {})[key] = last_seen
        if last_seen > self._watermarks.get(partition, 0.0):
            self._watermarks[partition] = last_seen

    def forget(self, key: bytes) -> None:
        """Stop tracking ``key`` (its state was deleted)."""
        partition = self._partition_of.pop(key, None)
        if partition is not None:
            self._loops.get(partition, {}).pop(key, None)

    def due(self, partition: int, now_monotonic: float) -> bool:
        """True at most once per ``interval_s`` per partition."""
        if now_monotonic < self._next_sweep.get(partition, 0.0):
            return False
        self._next_sweep[partition] = now_monotonic + self.interval_s
        return True

    def expired(
        self,
        partition: int,
        keys: Iterable[bytes] | Callable[[], Iterable[bytes]],
        peek: Callable[[bytes], tuple[int, float] | None],
        now: float | None = None,
    ) -> list[bytes]:
        """Keys of ``partition`` whose last event is more than ``ttl + grace`` before
        the partition's newest event time (or before ``now``, wall-clock epoch seconds,
        for a quiet partition); they are forgotten here, the caller deletes them.

        ``keys`` (or a function returning them) are the table's keys, read only on
        the partition's first sweep; ``peek`` reads (partition, last_seen) of a key
        this sweeper has not seen written (recovered state).
        """
        reference = now if now is not None else self._watermarks.get(partition)
        if reference is None:
            return []
        if partition not in self._scanned:
            self._scan(partition, keys() if callable(keys) else keys, peek)
        cutoff = reference - self.ttl_s - self.grace_s
        loops = self._loops.get(partition, {})
        expired = [key for key, last_seen in loops.items() if last_seen < cutoff]
        for key in expired:
            del loops[key]
            self._partition_of.pop(key, None)
        return expired

    def _scan(
        self,
        partition: int,
        keys: Iterable[bytes],
        peek: Callable[[bytes], tuple[int, float] | None],
    ) -> None:
        for key in keys:
            if key in self._partition_of:
                continue
            known = peek(key)
            if known is not None:
                self._partition_of[key] = known[0]
                self._loops.setdefault(known[0], {})[key] = known[1]
        self._scanned.add(partition)
