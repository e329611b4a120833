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
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic

from loopwarden.streams.runtime.app import LoopwardenApp
from loopwarden.streams.runtime.capability import Capability
from loopwarden.streams.runtime.capability_runner import Batches, run_capability
from loopwarden.streams.runtime.outcomes import send_outcome
from loopwarden.streams.runtime.records import Record
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

log = logging.getLogger(__name__)

OWNS = "%s owns partitions %s of %s"
"""The line logged at each assignment (tests and operators read who owns what)."""


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
    table = app.Table(
        declaration.table,
        partitions=settings.topics.partitions,
        key_type=bytes,  # bytes → faust's "raw" codec: snapshots are orjson already
        value_type=bytes,
        help=declaration.help,
    )
    store = TableStore(table, app.sink)
    core: KeyedCore[S, Out] = KeyedCore(declaration, processor, store, settings)
    driver = FaustDriver(app, core, after, record_span, settle)
    if capability.answers and settings.adapters.verdicts:
        driver.answer_as = capability.role
    if core.writes_at_commit:
        app.sink.before_commit(core.pending.write_gradually)  # no commit passes a state not durable
    app.on_partitions_revoked.connect(driver.revoked)
    app.on_partitions_assigned.connect(driver.assigned)
    if declaration.sweep_quiet_partitions:
        interval = settings.limits.expiry_sweep_interval_s
        app.timer(interval, name=f"expire_quiet_{declaration.table}")(driver.expire_quiet)
    if batches is None:
        agent = run_capability(app, capability, driver.handle, on_error=core.revert)
    else:
        agent = run_capability(
            app, capability, driver.handle_batch, batches=batches, on_error=core.revert
        )
    return KeyedWiring(store, core, agent)


class FaustDriver(Generic[Out]):
    """Feeds a worker's records to a :class:`KeyedCore` and sends what they produced."""

    def __init__(
        self,
        app: LoopwardenApp,
        core: KeyedCore[Any, Out],
        after: Callable[[Out, Record], None] | None,
        record_span: Callable[[Any, Out], None] | None,
        settle: Settle[Out] | None,
    ) -> None:
        self.app = app
        self.core = core
        self.after = after
        self.record_span = record_span
        self.settle = settle
        self.reroute_topic = core.declaration.reroute_topic(app.loopwarden.topics)
        self.answer_as: str | None = None
        """The role whose verdict answers each event seen (None: it sends none)."""
        self.table = core.declaration.table

    def handle(self, record: Record) -> int:
        """One record: applied, its states written when the declaration says so, its
        outputs sent, its partition swept."""
        core = self.core
        core.begin()
        outcome = self.apply(record)
        core.done()
        self.publish(outcome, record)
        core.expire(record.source.partition, time.monotonic())
        return outcome.events

    async def handle_batch(self, records: list[Record]) -> None:
        """A batch: applied, settled in a thread, its states kept again (settling may
        change them) and written when the declaration says so, its outputs sent."""
        core = self.core
        core.begin()
        outcomes = [self.apply(record) for record in records]
        settle = self.settle
        settled = list(await asyncio.to_thread(settle, outcomes)) if settle else []
        for outcome, record in zip(outcomes, records, strict=True):
            core.keep(outcome, record.source.partition, record.source.timestamp_ms)
        core.done()
        for outcome, record in zip(outcomes, records, strict=True):
            self.publish(outcome, record)
        self.app.outputs.emit_all(settled)
        now = time.monotonic()
        for partition in sorted({record.source.partition for record in records}):
            core.expire(partition, now)

    def apply(self, record: Record) -> Out:
        """Apply one record (inside a ``process`` span, described, when tracing is on)."""
        core, describe = self.core, self.record_span
        if describe is None:
            return core.apply(record)
        with process_span(
            self.app.otel_tracer,
            record.source,
            key=record.key.decode("utf-8", "replace") if record.key else None,
            trace_context=None,
            headers=record.headers,
            group=self.app.loopwarden.app_id,
        ) as span:
            outcome = core.apply(record)
            if span is not None:
                describe(span, outcome)
        return outcome

    def publish(self, outcome: Out, record: Record) -> None:
        """Dead letters, re-routes and named outputs sent; then the capability's own."""
        send_outcome(self.app, outcome, self.reroute_topic, self.answer_as, time.time())
        if self.after is not None:
            self.after(outcome, record)

    async def expire_quiet(self) -> None:
        """The wall-clock sweep of quiet partitions (a timer)."""
        await self.core.expire_quiet(time.monotonic(), time.time())

    async def revoked(self, sender: Any, /, *args: Any, signal: Any, **kwargs: Any) -> None:
        """Partitions revoked (Faust's signal: the set of them): pending states written
        first, the cache dropped."""
        self.core.revoked(self._home_partitions(args, kwargs))
        self.core.rebalance()

    async def assigned(self, sender: Any, /, *args: Any, signal: Any, **kwargs: Any) -> None:
        """Partitions assigned: swept afresh, the cache dropped."""
        owned = self._home_partitions(args, kwargs)
        self.core.assigned(owned)
        self.core.rebalance()
        log.info(OWNS, self.table, sorted(owned), self.core.home)

    def _home_partitions(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> set[int]:
        changed = args[0] if args else kwargs.get("changed", ())
        home = self.core.home
        return {tp.partition for tp in changed if tp.topic == home}
