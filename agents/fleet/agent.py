"""The Faust side of the fleet role: actions → family state → family warnings.

The agent reads the actions topic (second to the monitor) and the fleet re-route
topic as one stream, hands each record to :class:`FleetProcessor`, keeps the
families it changed in the ``fleet-family`` table (keyed by root loop id, so a
family's state lives with its root's partition; written once per offset commit, as
the monitor's loop states are) and sends each loop's warnings
to the warnings topic and one fleet warning per finding to the fleet-warnings
topic. Failed calls are routed to their tool's owner on the same re-route topic
(:mod:`~loopwarden.agents.fleet.tool_outage`); its outage notices go to the
tool-outages topic for the monitors. A family idle for ``fleet.idle_family_ttl_s``
of event time starts afresh; a sweep deletes idle families to reclaim memory.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from loopwarden.agents.capabilities import WorkerResources
from loopwarden.agents.fleet.outage_notices import outage_board
from loopwarden.agents.fleet.records import FleetProcessor
from loopwarden.agents.fleet.state import FamilyState
from loopwarden.agents.fleet.tool_outage import TOOL_KEY_PREFIX, ToolOutages
from loopwarden.schemas.positions import origin_from_headers
from loopwarden.streams.runtime.app import LoopwardenApp
from loopwarden.streams.runtime.capability import Capability
from loopwarden.streams.runtime.capability_runner import run_capability
from loopwarden.streams.runtime.runner import Record
from loopwarden.streams.runtime.state.expiry import (
    IdleLoopSweeper,
    snapshot_expiry,
    trusted_event_time,
)
from loopwarden.streams.runtime.state.pending_states import PendingStates
from loopwarden.streams.runtime.state.sweeps import follow_assignment
from loopwarden.streams.runtime.table_store import TableStore
from loopwarden.streams.tools.topics import FLEET_TABLE

log = logging.getLogger(__name__)


def register_fleet(app: LoopwardenApp, resources: WorkerResources, capability: Capability) -> Any:
    """Declare the family table and the ``watch_fleet`` agent on ``app``."""
    settings = app.loopwarden
    names = settings.topics
    table = app.Table(
        FLEET_TABLE,
        partitions=names.partitions,
        key_type=bytes,
        value_type=bytes,
        help="Per-family fleet state (loop tree, sums, ladder, fleet detectors).",
    )
    store = TableStore(table, app.sink)
    pending = PendingStates(store, restore=restore_state)  # written once per commit
    app.sink.before_commit(pending.write_gradually)
    limits = settings.limits
    processor = FleetProcessor.for_settings(settings, partitions=names.partitions)
    processor.board = outage_board(app)  # declared outages: their failures, every partition
    app.loop_health.tools = processor.tally
    sweeper = IdleLoopSweeper(
        settings.fleet.idle_family_ttl_s, limits.expiry_sweep_interval_s, limits.max_clock_skew_s
    )
    passed_over = 0

    def load_state(key: str) -> FamilyState | ToolOutages | None:
        return pending.load(key.encode())

    def peek(key: bytes) -> tuple[int, float] | None:
        data = store.get(key)
        return snapshot_expiry(data) if data else None

    def drop_failed_states() -> None:
        # the failed record may have half-updated the states it touched: back to the
        # last written ones
        for key in processor.touched:
            pending.drop(key.encode())

    follow_assignment(app, sweeper, names.actions, before_revoke=pending.write)

    def handle(record: Record) -> int:
        nonlocal passed_over
        source = record.source
        origin = origin_from_headers(record.headers) if source.topic != names.actions else None
        outcome = processor.process(record.value, record.key, source, load_state, origin)
        for key_text, state in outcome.states.items():
            key = key_text.encode()
            pending.keep(key, state, source.partition)
            skew = limits.max_clock_skew_s
            seen = trusted_event_time(state.updated_at, source.timestamp_ms, skew)
            sweeper.touch(key, state.partition, seen)
            if isinstance(state, FamilyState) and len(state.loops) > 1:
                app.loop_health.family_tree(state)
        if outcome.passed_over:
            passed_over += outcome.passed_over
            log.debug(
                "fleet: %d element(s) that are not valid actions passed over (%d so far; the "
                "monitor dead-letters them)",
                outcome.passed_over,
                passed_over,
            )
        app.reroute(names.fleet_reroute, outcome.reroutes)
        app.outputs.emit_all(outcome.outputs())
        if sweeper.due(source.partition, time.monotonic()):
            pending.write()  # the sweep reads the stored states
            expired = sweeper.expired(source.partition, store.keys, peek)
            for key in expired:
                store.delete(key, source.partition)
            if expired:
                log.info(
                    "partition %d: %d famil(ies) idle for fleet.idle_family_ttl_s reclaimed",
                    source.partition,
                    len(expired),
                )
        return outcome.events

    return run_capability(app, capability, handle, on_error=drop_failed_states)


def restore_state(key: str, data: bytes) -> FamilyState | ToolOutages:
    """A stored snapshot: a tool's outage state (``tool\x1f…``) or a family's."""
    if key.startswith(TOOL_KEY_PREFIX):
        return ToolOutages.restore(key[len(TOOL_KEY_PREFIX) :], data)
    return FamilyState.restore(key, data)
