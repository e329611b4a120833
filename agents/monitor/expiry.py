"""Idle-loop expiry, driven by event time per partition.

A loop whose last event is older than ``ttl`` seconds behind the newest event
seen on its partition is idle and its state is dropped. The sweep runs inside
the stream (a table may only change there) at most every ``interval`` seconds of
wall time per partition, and only touches loops of the partition being processed,
so deletions go to that partition's changelog.
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
    ) -> list[bytes]:
        """Keys of ``partition`` idle for longer than the TTL.

        ``keys`` are the keys held in the table; ``peek`` reads (partition,
        last_seen) of a key this sweeper has not seen written (recovered state).
        """
        watermark = self._watermarks.get(partition)
        if watermark is None:
            return []
        cutoff = watermark - self.ttl_s
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
