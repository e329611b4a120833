"""Idle-loop expiry, per partition.

A loop is idle, and its state is dropped, when

- its last event is ``ttl`` seconds (event time) older than the newest event on
  its partition — checked in the stream, at most every ``interval`` seconds per
  partition; or
- its partition has had no record at all for ``ttl`` seconds of wall time (a
  quiet partition never advances event time) — checked by a timer.

Deletions go to the loop's partition's changelog.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable


class IdleLoopSweeper:
    """Tracks (partition, last_seen) per loop and says which loops have expired."""

    def __init__(self, ttl_s: float, interval_s: float) -> None:
        self.ttl_s = ttl_s
        self.interval_s = interval_s
        self._loops: dict[bytes, tuple[int, float]] = {}
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
        """Stop tracking partitions this worker no longer owns."""
        for partition in partitions:
            self._last_record.pop(partition, None)
            self._watermarks.pop(partition, None)
            self._next_sweep.pop(partition, None)

    def touch(self, key: bytes, partition: int, last_seen: float) -> None:
        """Record that a loop was written with event time ``last_seen``."""
        self._loops[key] = (partition, last_seen)
        if last_seen > self._watermarks.get(partition, 0.0):
            self._watermarks[partition] = last_seen

    def due(self, partition: int, now_monotonic: float) -> bool:
        """True at most once per ``interval_s`` per partition."""
        if now_monotonic < self._next_sweep.get(partition, 0.0):
            return False
        self._next_sweep[partition] = now_monotonic + self.interval_s
        return True

    def expired(
        self,
        partition: int,
        keys: Iterable[bytes],
        peek: Callable[[bytes], tuple[int, float] | None],
        everything: bool = False,
    ) -> list[bytes]:
        """Keys of ``partition`` idle for longer than the TTL (all of them: ``everything``).

        ``keys`` are the keys held in the table; ``peek`` reads (partition,
        last_seen) of a key this sweeper has not seen written (recovered state).
        """
        watermark = self._watermarks.get(partition)
        if watermark is None and not everything:
            return []
        cutoff = float("inf") if everything else watermark - self.ttl_s  # type: ignore[operator]
        present = set()
        expired = []
        for key in keys:
            present.add(key)
            known = self._loops.get(key)
            if known is None:
                known = peek(key)
                if known is None:
                    continue
                self._loops[key] = known
            loop_partition, last_seen = known
            if loop_partition == partition and last_seen < cutoff:
                expired.append(key)
        for key in [k for k in self._loops if k not in present]:
            del self._loops[key]
        for key in expired:
            del self._loops[key]
        return expired
