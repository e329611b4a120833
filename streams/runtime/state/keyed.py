"""The worker's driver of the keyed-state kit: a processor and a declaration on Faust.

A capability that keeps state per key (the monitor's loops, the fleet's and the
guardrails' families, experience's open tasks) hands :func:`run_keyed` its pure
processor and its :class:`~loopwarden.streams.runtime.state.protocol.KeyedDeclaration`;
the protocol itself — restore, apply, commit, revert, expire, rebalance — is
:class:`~loopwarden.streams.runtime.state.core.KeyedCore`'s, which tests drive in memory
(:class:`~loopwarden.streams.runtime.state.harness.KeyedHarness`). What is Faust's is
here:

- the table (a Faust table of raw bytes: snapshots are encoded already) behind a
  :class:`~loopwarden.streams.runtime.table_store.TableStore`, and the sink's
  ``before_commit`` hook that writes pending states before every offset commit;
- the rebalance signals, and the wall-clock timer that reclaims quiet partitions;
- the agent, under the runner's error policy (a failed record's states are reverted);
- dead letters, re-routes and the named outputs, sent on the app's producers.

What is the capability's own — metrics, the loop-health page, HTTP replies — it does
in ``after``, which sees each record's outcome. With ``record_span`` (tracing on), each
record is processed inside a ``process`` span that the function describes.

A capability whose records need I/O besides the pure step (experience asks LanceDB for
advice) is run in ``batches`` with a ``settle`` function: the kit processes a batch's
records, then calls ``settle`` with their outcomes in a thread and emits what it
returns; if it raises, the batch's states go back to their last written state and the
runner's error policy decides (an outage pauses and retries the batch).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from loopwarden.streams.runtime.app import LoopwardenApp
from loopwarden.streams.runtime.capability import Capability
from loopwarden.streams.runtime.capability_runner import Batches, run_capability
from loopwarden.streams.runtime.runner import Record
from loopwarden.streams.runtime.state.core import KeyedCore
from loopwarden.streams.runtime.state.protocol import (
    KeyedDeclaration,
    KeyedProcessor,
    Out,
    S,
    Settle,
)
from loopwarden.streams.runtime.table_store import TableStore
from loopwarden.streams.runtime.telemetry.spans import process_span


@dataclass(slots=True)
class KeyedWiring:
    """What :func:`run_keyed` made: the table's store, the core and the agent."""

    store: TableStore
    core: KeyedCore[Any, Any]
    agent: Any

    def holds_any(self) -> bool:
        """True when any key has a state, written or pending (a cheap pre-check)."""
        return self.core.holds_any()


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
    each record and the keyed-state protocol handled by a :class:`KeyedCore`."""
    if settle is not None and batches is None:
        raise ValueError("settle works on batches: give run_keyed batches= too")
    settings = app.loopwarden
    names = settings.topics
    table = app.Table(
        declaration.table,
        partitions=names.partitions,
        key_type=bytes,  # bytes → faust's "raw" codec: snapshots are orjson already
        value_type=bytes,
        help=declaration.help,
    )
    store = TableStore(table, app.sink)
    core: KeyedCore[S, Out] = KeyedCore(declaration, processor, store, settings)
    if core.writes_at_commit:
        app.sink.before_commit(core.pending.write_gradually)  # no commit passes a state not durable
    follow_rebalances(app, core)
    if declaration.sweep_quiet_partitions:

        @app.timer(
            settings.limits.expiry_sweep_interval_s, name=f"expire_quiet_{declaration.table}"
        )
        async def expire_quiet_partitions() -> None:
            await core.expire_quiet(time.monotonic(), time.time())

    reroute_topic = declaration.reroute_topic(names)

    def apply(record: Record) -> Out:
        if record_span is None:
            return core.apply(record.value, record.key, record.source, record.headers)
        with process_span(
            app.otel_tracer,
            record.source,
            key=record.key.decode("utf-8", "replace") if record.key else None,
            trace_context=None,
            headers=record.headers,
            group=settings.app_id,
        ) as span:
            outcome = core.apply(record.value, record.key, record.source, record.headers)
            if span is not None:
                record_span(span, outcome)
        return outcome

    def publish(outcome: Out, record: Record) -> None:
        for letter in outcome.dead_letters:
            app.dead_letters.send(letter)
        app.reroute(reroute_topic, outcome.reroutes)
        app.outputs.emit_all(outcome.outputs())
        if after is not None:
            after(outcome, record)

    def handle(record: Record) -> int:
        core.begin()
        outcome = apply(record)
        core.done()
        publish(outcome, record)
        core.expire(record.source.partition, time.monotonic())
        return outcome.events

    async def handle_batch(records: list[Record]) -> None:
        core.begin()
        outcomes = [apply(record) for record in records]
        settled = list(await asyncio.to_thread(settle, outcomes)) if settle else []
        for outcome, record in zip(outcomes, records, strict=True):
            # settle may have changed a state an early write already took: keep it again
            core.keep(outcome, record.source.partition, record.source.timestamp_ms)
        core.done()
        for outcome, record in zip(outcomes, records, strict=True):
            publish(outcome, record)
        app.outputs.emit_all(settled)
        now = time.monotonic()
        for partition in sorted({record.source.partition for record in records}):
            core.expire(partition, now)

    if batches is None:
        agent = run_capability(app, capability, handle, on_error=core.revert)
    else:
        agent = run_capability(app, capability, handle_batch, batches=batches, on_error=core.revert)
    return KeyedWiring(store, core, agent)


def follow_rebalances(app: Any, core: KeyedCore[Any, Any]) -> None:
    """Connect Faust's rebalance signals to ``core``: pending states written before the
    home topic's partitions are revoked, the cache dropped and the sweeps reset."""
    home = core.home

    def partitions(changed: Any) -> set[int]:
        return {tp.partition for tp in changed if tp.topic == home}

    async def revoked(sender: Any, changed: Any = (), **kwargs: Any) -> None:
        core.revoked(partitions(changed))
        core.rebalance()

    async def assigned(sender: Any, changed: Any = (), **kwargs: Any) -> None:
        core.assigned(partitions(changed))
        core.rebalance()

    app.on_partitions_revoked.connect(revoked)
    app.on_partitions_assigned.connect(assigned)
