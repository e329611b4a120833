"""The Faust side of the action monitor: decode → monitor → send → store.

The agent reads raw bytes (a typed topic would stop the agent on the first
undecodable value) from the actions topic and its re-route topic, hands each
record to :class:`RecordProcessor` (a consumed message is a bundle of records,
see :mod:`loopwarden.streams.runtime.bundles`), keeps the loop states it changed and
writes them to the ``loop-state`` table once per offset commit
(:mod:`~loopwarden.streams.runtime.state.pending_states`), emits the outcome's named outputs
(warnings, reflection requests, lessons to remember) through ``app.outputs`` and queues
re-routed events and dead letters on the app's batched sink, flushed before every
offset commit. The agent itself, its topics and its error policy are the generic
runner's (:func:`~loopwarden.streams.runtime.capability_runner.run_capability`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from loopwarden.agents.capabilities import WorkerResources
from loopwarden.agents.fleet.outage_notices import outage_board
from loopwarden.agents.monitor.records import RecordProcessor
from loopwarden.agents.monitor.state import LoopState
from loopwarden.schemas.positions import origin_from_headers
from loopwarden.streams.runtime.app import LoopwardenApp
from loopwarden.streams.runtime.capability import Capability
from loopwarden.streams.runtime.capability_runner import run_capability
from loopwarden.streams.runtime.runner import Record
from loopwarden.streams.runtime.state.expiry import IdleLoopSweeper, trusted_event_time
from loopwarden.streams.runtime.state.pending_states import PendingStates
from loopwarden.streams.runtime.state.sweeps import follow_assignment
from loopwarden.streams.runtime.table_store import TableStore
from loopwarden.streams.runtime.telemetry.spans import EventSpans
from loopwarden.streams.tools.topics import LOOP_STATE_TABLE as STATE_TABLE

log = logging.getLogger(__name__)
RECLAIM_CHUNK = 10_000


def register_action_monitor(
    app: LoopwardenApp, resources: WorkerResources, capability: Capability
) -> Any:
    """Declare the state table and the ``monitor_actions`` agent on ``app``."""
    settings = app.loopwarden
    names = settings.topics
    states = app.Table(
        STATE_TABLE,
        partitions=names.partitions,
        key_type=bytes,  # bytes → faust's "raw" codec: snapshots are orjson already
        value_type=bytes,
        help="Per-loop monitor state (window, counters, reflections).",
    )
    processor = RecordProcessor.for_settings(
        settings, cache_loops=settings.limits.state_cache_loops, partitions=names.partitions
    )
    if app.otel_tracer is not None:
        processor.instrument = EventSpans(app.otel_tracer, settings.app_id)
    processor.outages = outage_board(app)  # the fleet role's declared outages

    metrics = app.metrics
    limits = settings.limits
    sweeper = IdleLoopSweeper(
        limits.idle_loop_ttl_s, limits.expiry_sweep_interval_s, limits.max_clock_skew_s
    )

    outputs = app.outputs
    store = TableStore(states, app.sink)
    pending = PendingStates(store, restore=LoopState.restore)
    app.sink.before_commit(pending.write_gradually)  # no commit passes a state not durable
    max_skew = limits.max_clock_skew_s

    def load_state(loop_id: str) -> LoopState | None:
        return pending.load(loop_id.encode())

    def drop_failed_states() -> None:
        # the failed record may have half-updated the states it touched: those loops
        # go back to their last written state; the others keep theirs
        reverted = sum(pending.drop(loop_id.encode()) for loop_id in processor.touched)
        processor.forget()
        if reverted:
            log.warning(
                "%d loop(s) touched by the failed record went back to their state at the "
                "last commit",
                reverted,
            )

    def peek(key: bytes) -> tuple[int, float] | None:
        data = store.get(key)
        return LoopState.peek_expiry(data) if data else None

    async def forget_cached_states(*args: Any, **kwargs: Any) -> None:
        processor.forget()  # the table may be recovered or handed over: re-read it

    @app.timer(settings.limits.expiry_sweep_interval_s, name="expire_quiet_partitions")
    async def expire_quiet_partitions() -> None:
        for partition in sweeper.quiet_partitions(time.monotonic()):
            pending.write()  # the sweep reads the stored states
            expired = sweeper.expired(partition, store.keys, peek, now=time.time())
            if expired:
                log.info(
                    "partition %d quiet for the TTL: state of %d idle loop(s) reclaimed",
                    partition,
                    len(expired),
                )
            for start in range(0, len(expired), RECLAIM_CHUNK):
                for key in expired[start : start + RECLAIM_CHUNK]:
                    store.delete(key, partition)
                    processor.evict(key.decode())
                await asyncio.sleep(0)  # a million deletions blocked the loop for 10 s

    # pending states are written before another worker reads these partitions' changelog
    follow_assignment(app, sweeper, names.actions, before_revoke=pending.write)

    app.on_partitions_revoked.connect(forget_cached_states)
    app.on_partitions_assigned.connect(forget_cached_states)

    def handle(record: Record) -> int:
        source = record.source
        origin = origin_from_headers(record.headers) if source.topic != names.actions else None
        outcome = processor.process(
            record.value, record.key, source, load_state, origin, record.headers
        )
        for loop_id, state in outcome.states.items():
            key = loop_id.encode()  # one bytes object for the table and the sweeper
            pending.keep(key, state, source.partition)
            seen = trusted_event_time(state.last_seen, source.timestamp_ms, max_skew)
            sweeper.touch(key, state.partition, seen)
        for letter in outcome.dead_letters:
            app.dead_letters.send(letter)
        for loop_id, event_id, count in outcome.duplicates:
            metrics.duplicate()
            if count == 1:  # once per loop; the metric counts every one
                log.info(
                    "loop %s: event %s skipped, its id was already applied in this loop "
                    "(give every event its own event_id); further duplicates of this loop "
                    "are counted in loopwarden.events.duplicates",
                    loop_id,
                    event_id,
                )
        app.reroute(names.actions_reroute, outcome.reroutes)
        outputs.emit_all(outcome.outputs())
        if outcome.warned:
            now = time.time()
            for kind, published_at in outcome.warned:
                metrics.warning_latency(kind, now - published_at)
        sweeper.record_seen(source.partition, time.monotonic())
        if sweeper.due(source.partition, time.monotonic()):
            pending.write()  # the sweep reads the stored states
            expired = sweeper.expired(source.partition, store.keys, peek)
            if expired:
                log.info(
                    "partition %d: state of %d loop(s) idle for the TTL (event time) reclaimed",
                    source.partition,
                    len(expired),
                )
            for key in expired:
                store.delete(key, source.partition)
                processor.evict(key.decode())
        return outcome.events

    return run_capability(app, capability, handle, on_error=drop_failed_states)
