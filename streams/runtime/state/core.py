"""The keyed-state protocol, once: restore, apply, commit, revert, expire, rebalance.

:class:`KeyedCore` holds a capability's processor and declaration over a
:class:`~loopwarden.streams.runtime.state.pending_states.StateStore` and does, without
Faust, everything the kit promises:

- **restore**: a key's state is read from what this record changed, else the
  pending states, else the decoded-state cache, else the store (decoded with
  ``declaration.restore``);
- **apply** a record (or a batch's records): the processor gets the record and a view
  of its states (:class:`~loopwarden.streams.runtime.state.view.StateView`, with the
  declaration's TTL); the states it changed are kept pending; the keys it touched are
  remembered until the record (batch) is done;
- **commit**: pending states become snapshots in the store — before every offset
  commit (``writes="at_commit"``), or when the record (batch) is done
  (``writes="every_record"``);
- **revert**: after a failure, the states the failed record (batch) touched go back to
  their last written state (the others keep theirs);
- **expire** idle keys on event time, per partition, and for quiet partitions on the
  wall clock (:class:`~loopwarden.streams.runtime.state.expiry.IdleLoopSweeper`);
- **rebalance**: the cache is dropped (the table may be recovered or handed over);
  pending states are written before partitions are revoked.

The worker drives it from Faust (:func:`~loopwarden.streams.runtime.keyed_runner.run_keyed`),
tests drive it in memory (:class:`~loopwarden.streams.runtime.state.harness.KeyedHarness`).
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import replace
from typing import Generic

from loopwarden.schemas.positions import origin_from_headers
from loopwarden.settings import Settings
from loopwarden.streams.runtime.state.expiry import IdleLoopSweeper, trusted_event_time
from loopwarden.streams.runtime.state.pending_states import PendingStates, StateStore
from loopwarden.streams.runtime.state.protocol import (
    KeyedDeclaration,
    KeyedProcessor,
    KeyedRecord,
    Out,
    S,
)

log = logging.getLogger(__name__)

RECLAIM_CHUNK = 10_000
"""Deletions between two yields to the event loop in a wall-clock sweep (a million
deletions in one go blocked the loop for 10 s)."""


class KeyedCore(Generic[S, Out]):
    """One capability's keyed state and its processor (module docstring)."""

    def __init__(
        self,
        declaration: KeyedDeclaration[S],
        processor: KeyedProcessor[Out],
        store: StateStore,
        settings: Settings,
    ) -> None:
        self.declaration = declaration
        self.processor = processor
        self.store = store
        self.settings = settings
        self.home = declaration.home_topic(settings.topics)
        self.pending = PendingStates(store, restore=declaration.restore)
        limits = settings.limits
        self.max_skew_s = limits.max_clock_skew_s
        self.idle_ttl_s = declaration.idle_ttl_s(settings)
        """How long a key may stay idle (event time): the views' and the sweeps' TTL."""
        self.sweeper = IdleLoopSweeper(
            self.idle_ttl_s, limits.expiry_sweep_interval_s, self.max_skew_s
        )
        self.cache_size = declaration.cache_states(settings)
        self._cache: OrderedDict[str, S] = OrderedDict()
        self.in_flight: set[str] = set()
        """Keys the record (or batch) under way loaded or changed."""

    @property
    def writes_at_commit(self) -> bool:
        """States reach the store before each offset commit (else when a record is done)."""
        return self.declaration.writes == "at_commit"

    # restore

    def load(self, key: str) -> S | None:
        """``key``'s latest state: pending, cached, else stored (decoded), else None."""
        state: S | None
        raw = key.encode()
        pending = self.pending
        if pending.holds(raw):
            state = pending.load(raw)
            return state
        cache = self._cache
        state = cache.get(key)
        if state is not None:
            cache.move_to_end(key)
            return state
        state = pending.load(raw)  # not pending: the stored snapshot, decoded
        if state is not None and self.cache_size:
            self._cached(key, state)
        return state

    def holds_any(self) -> bool:
        """True when any key has a state, written or pending (a cheap pre-check)."""
        return bool(len(self.pending)) or next(iter(self.store.keys()), None) is not None

    # apply

    def begin(self) -> None:
        """A record (or a batch) starts: nothing is in flight."""
        self.in_flight.clear()

    def apply(self, record: KeyedRecord) -> Out:
        """Process one record with its states (a :class:`StateView` built here, with the
        declaration's TTL) and keep those it changed; the keys it touched stay in flight
        (to revert) until the record (or batch) is done. A record from another topic
        than the home one is re-routed: its origin is read from its headers."""
        source = record.source
        if source.topic != self.home:
            record = replace(record, origin=origin_from_headers(record.headers))
        view = self.declaration.view(self.load, self.idle_ttl_s, source.partition)
        try:
            outcome = self.processor.process(record, view)
        finally:
            self.in_flight.update(view.touched)
        if outcome.states is not view.changed:
            raise TypeError(
                f"{self.declaration.table}: a processor's outcome.states must be its view's"
                " changed states"
            )
        self.keep(outcome, source.partition, source.timestamp_ms)
        return outcome

    def keep(self, outcome: Out, partition: int, timestamp_ms: int | None = None) -> None:
        """Keep ``outcome``'s states until the next write (again, after a batch's settle
        step changed them) and track their event time for expiry."""
        declaration, sweeper, pending = self.declaration, self.sweeper, self.pending
        for key_text, state in outcome.states.items():
            key = key_text.encode()  # one bytes object for the table and the sweeper
            pending.keep(key, state, partition)
            if state is None:
                sweeper.forget(key)
                self._cache.pop(key_text, None)
            else:
                if self.cache_size:
                    self._cached(key_text, state)
                last = declaration.seen_at(state) or 0.0
                seen = trusted_event_time(last, timestamp_ms, self.max_skew_s)
                sweeper.touch(key, state.partition, seen)

    def done(self) -> None:
        """The record (or batch) is done: with ``writes="every_record"`` its states are
        written now."""
        self.in_flight.clear()
        if not self.writes_at_commit:
            self.pending.write()

    # commit

    def commit(self) -> None:
        """Write every pending state (the worker does it gradually before each commit)."""
        self.pending.write()

    # revert

    def revert(self) -> int:
        """A record (or batch) failed: the states it touched go back to their last
        written state; how many did."""
        in_flight = self.in_flight
        reverted = 0
        for key in in_flight:
            reverted += self.pending.drop(key.encode())
            self._cache.pop(key, None)  # may be half-updated in place
        in_flight.clear()
        if reverted:
            log.warning(
                "%d %s touched by the failed record went back to their state at the last write",
                reverted,
                self.declaration.noun,
            )
        return reverted

    # expire

    def expire(self, partition: int, now_monotonic: float) -> list[bytes]:
        """After a record of ``partition``: at most once per sweep interval, reclaim its
        keys idle for the TTL before its newest event time; the keys reclaimed."""
        sweeper = self.sweeper
        sweeper.record_seen(partition, now_monotonic)
        if not sweeper.due(partition, now_monotonic):
            return []
        # no write first: the sweeper's index holds every kept state's event time (see
        # keep), a sweep reads the table only for keys it has not seen kept or written,
        # and reclaim drops a reclaimed key's kept state too. Writing every kept loop
        # before each partition's sweep was 3 % of a saturated worker (issue 71)
        expired = sweeper.expired(partition, self.store.keys, self._peek)
        if expired:
            log.info(
                "partition %d: state of %d %s idle for %s (event time) reclaimed",
                partition,
                len(expired),
                self.declaration.noun,
                self.declaration.ttl_setting,
            )
        self.reclaim(partition, expired)
        return expired

    async def expire_quiet(self, now_monotonic: float, now: float) -> list[bytes]:
        """Reclaim the idle keys of partitions that received nothing for the TTL (wall
        clock ``now``), yielding to the event loop between chunks; the keys reclaimed."""
        reclaimed: list[bytes] = []
        for partition in self.sweeper.quiet_partitions(now_monotonic):
            expired = self.sweeper.expired(partition, self.store.keys, self._peek, now=now)
            if expired:
                log.info(
                    "partition %d quiet for the TTL: state of %d idle %s reclaimed",
                    partition,
                    len(expired),
                    self.declaration.noun,
                )
            for start in range(0, len(expired), RECLAIM_CHUNK):
                self.reclaim(partition, expired[start : start + RECLAIM_CHUNK])
                await asyncio.sleep(0)
            reclaimed += expired
        return reclaimed

    def reclaim(self, partition: int, keys: Iterable[bytes]) -> None:
        """Delete ``keys``' states (tombstones on ``partition``), kept ones too."""
        for key in keys:
            self.pending.drop(key)
            self.store.delete(key, partition)
            self._cache.pop(key.decode(), None)

    # rebalance

    def rebalance(self) -> None:
        """Partitions moved: decoded states may be stale, read the store again."""
        self._cache.clear()

    def revoked(self, partitions: set[int]) -> None:
        """Partitions are being taken away: their states are written first (another
        worker is about to read their changelog) and no longer swept here."""
        self.pending.write()
        self.sweeper.forget_partitions(partitions)

    def assigned(self, partitions: set[int]) -> None:
        """Partitions were given: their keys are scanned afresh at their next sweep."""
        self.sweeper.forget_partitions(partitions)

    def _peek(self, key: bytes) -> tuple[int, float] | None:
        data = self.store.get(key)
        return self.declaration.peek_expiry(data) if data else None

    def _cached(self, key: str, state: S) -> None:
        cache = self._cache
        cache[key] = state
        cache.move_to_end(key)
        if len(cache) > self.cache_size:
            cache.popitem(last=False)
