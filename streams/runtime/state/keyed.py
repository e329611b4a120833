"""One wiring for every keyed, stateful capability: a processor plus a declaration.

A capability that keeps state per key (the monitor's loops, the fleet's families,
the guardrails' families) hands :func:`run_keyed` its pure processor and a
:class:`KeyedDeclaration`; the kit owns the rest of the keyed-state protocol, the
same way for each:

- the table (a Faust table of raw bytes: snapshots are encoded already) and its
  writes — once per offset commit through
  :class:`~loopwarden.streams.runtime.state.pending_states.PendingStates`, or at every
  record (``writes="every_record"``: for state an HTTP API reads straight from the
  table);
- the revert on failure: the states a failed record touched go back to their last
  written state (only what was kept and not yet written can be half-updated);
- idle expiry on event time (:class:`~loopwarden.streams.runtime.state.expiry.IdleLoopSweeper`),
  following the consumer's assignment, and for quiet partitions on the wall clock
  when the declaration asks for it;
- re-routes to the key's own partition, dead letters and the named outputs.

What is the capability's own — metrics, the loop-health page, HTTP replies — it
does in ``after``, which sees each record's outcome. With ``record_span`` (tracing on),
each record is processed inside a ``process`` span that the function describes.

A key an outcome maps to None has ended: its state is deleted (a changelog tombstone).
A capability whose records need I/O besides the pure step (experience asks LanceDB for
advice) is run in ``batches`` with a ``settle`` function: the kit processes a batch's
records, then calls ``settle`` with their outcomes in a thread and emits what it
returns; if it raises, the batch's states go back to their last written state and the
runner's error policy decides (an outage pauses and retries the batch).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar

from loopwarden.schemas.dead_letter import DeadLetter, SourcePosition
from loopwarden.schemas.positions import Origin, origin_from_headers
from loopwarden.settings import Settings, TopicSettings
from loopwarden.streams.runtime.app import LoopwardenApp
from loopwarden.streams.runtime.capability import Capability
from loopwarden.streams.runtime.capability_runner import Batches, run_capability
from loopwarden.streams.runtime.runner import Record
from loopwarden.streams.runtime.state.expiry import IdleLoopSweeper, trusted_event_time
from loopwarden.streams.runtime.state.pending_states import PendingStates
from loopwarden.streams.runtime.state.reroute import Reroute
from loopwarden.streams.runtime.state.sweeps import follow_assignment
from loopwarden.streams.runtime.table_store import TableStore
from loopwarden.streams.runtime.telemetry.spans import process_span

log = logging.getLogger(__name__)

RECLAIM_CHUNK = 10_000
"""Deletions between two yields to the event loop in a wall-clock sweep (a million
deletions in one go blocked the loop for 10 s)."""


class KeyedState(Protocol):
    """What the kit needs of a state: its partition and its snapshot."""

    @property
    def partition(self) -> int: ...

    def snapshot(self) -> bytes: ...


S = TypeVar("S", bound=KeyedState)
S_co = TypeVar("S_co", bound=KeyedState, covariant=True)


class KeyedOutcome(Protocol[S_co]):
    """What one record produced (each capability's ``*RecordOutcome``)."""

    @property
    def states(self) -> Mapping[str, S_co | None]:
        """The states to write back, by key (None: the key's state has ended)."""
        ...

    @property
    def dead_letters(self) -> Sequence[DeadLetter]: ...

    @property
    def reroutes(self) -> Sequence[Reroute]: ...

    @property
    def events(self) -> int: ...

    def outputs(self) -> Iterator[tuple[str, Any]]: ...


Out = TypeVar("Out", bound=KeyedOutcome[Any])
Out_co = TypeVar("Out_co", bound=KeyedOutcome[Any], covariant=True)


class KeyedProcessor(Protocol[Out_co]):
    """A capability's pure processor: a record and a state loader in, an outcome out."""

    @property
    def touched(self) -> Iterable[str]:
        """The keys the last (or current) :meth:`process` call loaded or changed."""
        ...

    def process(
        self,
        value: bytes | None,
        key: bytes | None,
        source: SourcePosition,
        load_state: Callable[[str], Any],
        origin: Origin | None = None,
        headers: Sequence[Any] = (),
    ) -> Out_co: ...

    def forget(self) -> None:
        """Drop every cached state (the table may be recovered or handed over)."""
        ...

    def evict(self, key: str) -> None:
        """Drop one key's cached state (it was deleted)."""
        ...


@dataclass(frozen=True, slots=True)
class KeyedDeclaration(Generic[S]):
    """How a capability keeps its state: the kit does the rest (module docstring)."""

    table: str
    """The Faust table's name (its changelog is ``<app id>-<table>-changelog``)."""
    help: str
    """The table's description."""
    home_topic: Callable[[TopicSettings], str]
    """The topic whose partitions the keys live on; a record from any other topic of
    the capability's is a re-routed one (its origin is in its headers)."""
    reroute_topic: Callable[[TopicSettings], str]
    """Where an event of another partition's key is sent."""
    restore: Callable[[str, bytes], S]
    """A stored snapshot (key as text) decoded."""
    peek_expiry: Callable[[bytes], tuple[int, float]]
    """A stored snapshot's partition and event time, read cheaply (for the sweeps)."""
    seen_at: Callable[[S], float]
    """A state's event time (its last event's)."""
    idle_ttl_s: Callable[[Settings], float]
    """How long (event time) a key may stay idle before its state is reclaimed."""
    ttl_setting: str
    """The setting of that TTL, named in the reclaim log line."""
    noun: str = "key(s)"
    """What a key is, in log lines: ``loop(s)``, ``famil(ies)``."""
    writes: Literal["at_commit", "every_record"] = "at_commit"
    """When states reach the table: once per offset commit, or with every record (in
    batches: at the end of every batch, so a failed batch reverts nothing older)."""
    sweep_quiet_partitions: bool = False
    """Also reclaim idle keys of partitions that receive nothing, on the wall clock."""


@dataclass(slots=True)
class KeyedWiring:
    """What :func:`run_keyed` made: the table's store and the agent."""

    store: TableStore
    agent: Any
    pending: PendingStates

    def holds_any(self) -> bool:
        """True when any key has a state, written or pending (a cheap pre-check)."""
        return bool(len(self.pending)) or bool(self.store.table.data)


Settle = Callable[[list[Out]], Iterable[tuple[str, Any]]]
"""A batch's outcomes → more named outputs, after I/O (run in a thread)."""


def run_keyed(
    app: LoopwardenApp,
    capability: Capability,
    declaration: KeyedDeclaration[S],
    processor: KeyedProcessor[Out],
    after: Callable[[Out, Record], None] | None = None,
    record_span: Callable[[Any, Out], None] | None = None,
    batches: Batches | None = None,
    settle: Settle[Out] | None = None,
) -> KeyedWiring:
    """Declare ``capability``'s table and agent on ``app``, with ``processor`` applying
    each record and the keyed-state protocol handled here (module docstring)."""
    if settle is not None and batches is None:
        raise ValueError("settle works on batches: give run_keyed batches= too")
    settings = app.loopwarden
    names = settings.topics
    limits = settings.limits
    home, reroute_topic = declaration.home_topic(names), declaration.reroute_topic(names)
    table = app.Table(
        declaration.table,
        partitions=names.partitions,
        key_type=bytes,  # bytes → faust's "raw" codec: snapshots are orjson already
        value_type=bytes,
        help=declaration.help,
    )
    store = TableStore(table, app.sink)
    pending = PendingStates(store, restore=declaration.restore)
    at_commit = declaration.writes == "at_commit"
    if at_commit:
        app.sink.before_commit(pending.write_gradually)  # no commit passes a state not durable
    sweeper = IdleLoopSweeper(
        declaration.idle_ttl_s(settings), limits.expiry_sweep_interval_s, limits.max_clock_skew_s
    )

    in_flight: set[str] = set()
    """Keys the records being handled (one, or a batch) loaded or changed."""

    def load(key: str) -> S | None:
        state: S | None = pending.load(key.encode())
        return state

    def keep(key: bytes, state: S | None, partition: int) -> None:
        if at_commit or batches is not None:  # a batch's states are written at its end
            pending.keep(key, state, partition)
        elif state is None:
            store.delete(key, partition)
        else:
            store.put(key, state.snapshot(), partition)

    def revert_failed_states() -> None:
        # the failed record may have half-updated the states it touched: back to their
        # last written state; the others keep theirs
        in_flight.update(processor.touched)
        reverted = sum(pending.drop(key.encode()) for key in in_flight)
        in_flight.clear()
        processor.forget()
        if reverted:
            log.warning(
                "%d %s touched by the failed record went back to their state at the last commit",
                reverted,
                declaration.noun,
            )

    def peek(key: bytes) -> tuple[int, float] | None:
        data = store.get(key)
        return declaration.peek_expiry(data) if data else None

    def reclaim(partition: int, keys: Iterable[bytes]) -> None:
        for key in keys:
            store.delete(key, partition)
            processor.evict(key.decode())

    def forget_cached_states(*args: Any, **kwargs: Any) -> None:
        processor.forget()  # the table may be recovered or handed over: re-read it

    # pending states are written before another worker reads these partitions' changelog
    follow_assignment(app, sweeper, home, before_revoke=pending.write)
    app.on_partitions_revoked.connect(forget_cached_states)
    app.on_partitions_assigned.connect(forget_cached_states)

    if declaration.sweep_quiet_partitions:

        @app.timer(limits.expiry_sweep_interval_s, name=f"expire_quiet_{declaration.table}")
        async def expire_quiet_partitions() -> None:
            for partition in sweeper.quiet_partitions(time.monotonic()):
                pending.write()  # the sweep reads the stored states
                expired = sweeper.expired(partition, store.keys, peek, now=time.time())
                if expired:
                    log.info(
                        "partition %d quiet for the TTL: state of %d idle %s reclaimed",
                        partition,
                        len(expired),
                        declaration.noun,
                    )
                for start in range(0, len(expired), RECLAIM_CHUNK):
                    reclaim(partition, expired[start : start + RECLAIM_CHUNK])
                    await asyncio.sleep(0)

    max_skew = limits.max_clock_skew_s

    def apply(record: Record) -> Out:
        """Process one record and keep the states it changed."""
        source = record.source
        origin = origin_from_headers(record.headers) if source.topic != home else None
        if record_span is None:
            outcome = processor.process(
                record.value, record.key, source, load, origin, record.headers
            )
        else:
            with process_span(
                app.otel_tracer,
                source,
                key=record.key.decode("utf-8", "replace") if record.key else None,
                trace_context=None,
                headers=record.headers,
                group=settings.app_id,
            ) as span:
                outcome = processor.process(
                    record.value, record.key, source, load, origin, record.headers
                )
                if span is not None:
                    record_span(span, outcome)
        in_flight.update(processor.touched)
        keep_states(outcome, source.partition, source.timestamp_ms)
        return outcome

    def keep_states(outcome: Out, partition: int, timestamp_ms: int | None) -> None:
        for key_text, state in outcome.states.items():
            key = key_text.encode()  # one bytes object for the table and the sweeper
            keep(key, state, partition)
            if state is None:
                sweeper.forget(key)
                processor.evict(key_text)
            else:
                seen = trusted_event_time(declaration.seen_at(state), timestamp_ms, max_skew)
                sweeper.touch(key, state.partition, seen)

    def publish(outcome: Out, record: Record) -> None:
        for letter in outcome.dead_letters:
            app.dead_letters.send(letter)
        app.reroute(reroute_topic, outcome.reroutes)
        app.outputs.emit_all(outcome.outputs())
        if after is not None:
            after(outcome, record)

    def sweep(partition: int) -> None:
        now = time.monotonic()
        sweeper.record_seen(partition, now)
        if sweeper.due(partition, now):
            pending.write()  # the sweep reads the stored states
            expired = sweeper.expired(partition, store.keys, peek)
            if expired:
                log.info(
                    "partition %d: state of %d %s idle for %s (event time) reclaimed",
                    partition,
                    len(expired),
                    declaration.noun,
                    declaration.ttl_setting,
                )
            reclaim(partition, expired)

    def handle(record: Record) -> int:
        in_flight.clear()
        outcome = apply(record)
        publish(outcome, record)
        sweep(record.source.partition)
        return outcome.events

    async def handle_batch(records: list[Record]) -> None:
        in_flight.clear()
        outcomes = [apply(record) for record in records]
        settled = list(await asyncio.to_thread(settle, outcomes)) if settle else []
        for outcome, record in zip(outcomes, records, strict=True):
            # settle may have changed a state an early write already took: keep it again
            keep_states(outcome, record.source.partition, record.source.timestamp_ms)
            publish(outcome, record)
        app.outputs.emit_all(settled)
        if not at_commit:
            pending.write()  # every record's (here: every batch's) states, now
        for partition in sorted({record.source.partition for record in records}):
            sweep(partition)

    if batches is None:
        agent = run_capability(app, capability, handle, on_error=revert_failed_states)
    else:
        agent = run_capability(
            app, capability, handle_batch, batches=batches, on_error=revert_failed_states
        )
    return KeyedWiring(store, agent, pending)
