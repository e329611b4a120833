"""The consumer, producer and transport workarounds (listed in :mod:`..workarounds`).

These classes expect the app to be a :class:`~loopwarden.streams.runtime.app.LoopwardenApp`
(``app.loopwarden`` settings and ``app.sink``): what they read of it is
:class:`WorkerAppParts`, so this module does not import the app that installs it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping
from time import monotonic
from typing import Any, Protocol, cast

from faust.transport.drivers import aiokafka as faust_aiokafka
from faust.types.tuples import ack_lock

from loopwarden.errors import PublishError
from loopwarden.settings import Settings
from loopwarden.streams.client.fetch_wait import ROUTINE_TIMEOUT_MS, fetch_wait_follows_traffic
from loopwarden.streams.client.offsets import probe_end_offsets
from loopwarden.streams.runtime.backoff import Backoff
from loopwarden.streams.runtime.bundles import RecordBundle, bundle_fetched
from loopwarden.streams.runtime.service_log import SERVICE_LOG
from loopwarden.streams.runtime.sink import RecordSink
from loopwarden.streams.runtime.workarounds.seek_gate import SeekGate

log = logging.getLogger(__name__)


class WorkerAppParts(Protocol):
    """What the workarounds read of the worker's app."""

    loopwarden: Settings
    sink: RecordSink
    bundled_topics: set[str]
    consumer_generation_id: int | None
    flow_control: Any


def _app(service: Any) -> WorkerAppParts:
    """The loopwarden app a Faust service of this worker belongs to."""
    return cast(WorkerAppParts, service.app)


class _FetchedRecords(dict[Any, list[Any]]):
    """A fetched batch with each partition's aiokafka state and position at hand-over."""

    positions: dict[Any, tuple[Any, int]]


class _TunedConsumerThread(faust_aiokafka.AIOKafkaConsumerThread):
    logger = SERVICE_LOG  # mode's start/stop narration, quiet at info

    async def on_start(self) -> None:
        await super().on_start()
        kafka = _app(self).loopwarden.kafka
        consumer = cast(Any, self._consumer)  # made by super().on_start()
        fetch_wait_follows_traffic(
            consumer._fetcher, kafka.fetch_max_wait_ms, kafka.idle_fetch_max_wait_ms
        )

    async def _fetch_records(
        self,
        consumer: Any,
        active_partitions: Any,
        timeout: float | None = None,
        max_records: int | None = None,
    ) -> Any:
        # Faust hands over its live set of active partitions, which its event loop
        # keeps editing (pauses during a rebalance) while this thread fetches; and
        # aiokafka reads an empty set as "every partition": records of paused partitions
        # came back, moved their positions, and were then dropped by Faust
        partitions = set(active_partitions)
        if not partitions:
            return {}
        records = await super()._fetch_records(
            consumer, partitions, timeout=timeout, max_records=max_records
        )
        if not records:
            return records
        batch = _FetchedRecords(records)
        assignment = consumer._subscription.subscription.assignment
        batch.positions = {}
        for tp in records:
            state = assignment.state_value(tp) if assignment is not None else None
            if state is not None and state.has_valid_position:
                batch.positions[tp] = (state, state.position)
        return batch

    async def _highwaters(self, partitions: list[Any]) -> Mapping[Any, int]:
        reported = await super()._highwaters(partitions)
        kafka = _app(self).loopwarden.kafka
        if not kafka.probe_end_offsets:
            return reported
        return await probe_end_offsets(
            kafka.bootstrap_servers,
            reported,
            fetch_max_wait_ms=kafka.fetch_max_wait_ms,
            security=kafka.security,
        )

    def _create_worker_consumer(self, transport: Any) -> Any:
        consumer = super()._create_worker_consumer(transport)
        # aiokafka reads this attribute when it builds its Fetcher in start().
        kafka = _app(self).loopwarden.kafka
        consumer._fetch_max_wait_ms = kafka.fetch_max_wait_ms
        consumer._fetch_min_bytes = kafka.fetch_min_bytes  # faust passes none of its own
        consumer._consumer_timeout = ROUTINE_TIMEOUT_MS / 1000  # and this one too
        return consumer


class _TunedConsumer(faust_aiokafka.Consumer):
    logger = SERVICE_LOG  # mode's start/stop narration, quiet at info

    stale_records = 0
    _positions: dict[Any, tuple[Any, int]]
    _bundle_first: dict[Any, int]
    _seek_gate: SeekGate[Any]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._bundle_first = {}  # partition → first offset of the bundle last handed over
        self._seek_gate = SeekGate()  # input partitions assigned, not yet at their commit
        super().__init__(*args, **kwargs)

    async def on_partitions_assigned(self, assigned: set[Any], generation_id: int = 0) -> None:
        # every input partition of a new assignment is read only once it stands at its
        # committed offset (see seek_to_committed): records fetched meanwhile are dropped
        self._seek_gate.assigned(tp for tp in assigned if not self._is_changelog_tp(tp))
        await super().on_partitions_assigned(assigned, generation_id)

    def resume_partitions(self, tps: Any) -> None:
        """Faust resumes the input partitions just *before* it seeks them to their
        committed offsets: those are resumed once the seek is done."""
        super().resume_partitions({tp for tp in tps if not self._seek_gate.holds(tp)})

    async def seek_to_committed(self) -> Mapping[Any, int]:
        """Seek to the committed offsets, an input partition without one to its
        beginning (aiokafka leaves it where an earlier fetch left it), then resume the
        input partitions held back until now — unless a newer assignment came during
        the seek (:class:`SeekGate`: its own seek resumes them, after its recovery)."""
        # Faust's fetch loop also seeks whenever the flow is stopped (from a rebalance's
        # start until its recovery reads the changelogs): only the seek that ends a
        # recovery, made with the flow running, releases the partitions (SeekGate)
        ticket = self._seek_gate.seek_begins(releases=self.flow_active or not self.app.tables)
        try:
            committed: Mapping[Any, int] = await super().seek_to_committed()
            fresh = {
                tp: 0
                for tp, offset in committed.items()
                if not offset and not self._is_changelog_tp(tp)
            }
            if fresh:
                await self.seek_wait(fresh)
        finally:
            released = self._seek_gate.seek_ends(ticket)
            if not released and ticket.partitions and ticket.releases:
                log.info(
                    "a rebalance came during the seek to the committed offsets: "
                    "its partitions wait for the new assignment's recovery"
                )
            super().resume_partitions(released & self.assignment())
        return committed

    async def verify_all_partitions_active(self) -> None:
        """Faust's livelock check (every 2.5 commit intervals), yielding to the loop
        between partitions as Faust's does, but without ``Service.sleep(0)``: that is
        a task made and cancelled per assigned partition (a worker with every role
        holds about 80: 11 a second, a third of an idle worker's event-loop work)."""
        now = monotonic()
        for tp in self.assignment():
            await asyncio.sleep(0)
            if not self.should_stop:
                self.verify_event_path(now, tp)

    def _new_consumer_thread(self) -> faust_aiokafka.AIOKafkaConsumerThread:
        return _TunedConsumerThread(self, loop=self.loop, beacon=self.beacon)

    async def _wait_next_records(self, timeout: float) -> Any:
        records, active_partitions = await super()._wait_next_records(timeout)
        self._positions = getattr(records, "positions", {})
        if records:
            kafka = _app(self).loopwarden.kafka
            bundle_fetched(
                cast("dict[Any, list[Any]]", records),  # our _FetchedRecords, a dict
                _app(self).bundled_topics,
                kafka.bundle_max_records,
                kafka.bundle_max_bytes,
            )
        return records, active_partitions

    async def getmany(self, timeout: float) -> AsyncIterator[Any]:
        stale: set[Any] = set()
        async for tp, message in super().getmany(timeout):
            if self._seek_gate.holds(tp):  # fetched before the seek to its commit
                self.stale_records += 1
                continue
            if tp in stale or not self._still_at_fetched_position(tp):
                if tp not in stale:
                    stale.add(tp)
                    log.info(
                        "%s was reassigned or moved since its records were fetched: "
                        "dropping them (they are fetched again from the new position)",
                        tp,
                    )
                self.stale_records += 1
                continue
            if isinstance(message.value, RecordBundle):
                self._bundle_first[tp] = message.value.first_offset
            yield tp, message

    def ack(self, message: Any) -> bool:
        generation = message.generation_id
        stale = generation is not None and generation != _app(self).consumer_generation_id
        if stale or not _app(self).flow_control.is_active():
            with ack_lock:  # as Faust's ack: marks it done, counts nothing
                message.acked = True
                self._unacked_messages.discard(message)
            return False
        return bool(super().ack(message))

    def _new_offset(self, tp: Any) -> int | None:
        # A record handed over twice around a seek is acknowledged twice: Faust then
        # finds a run of one offset ([311, 311, 312, ...]) and commits crawled one
        # offset per interval (a restarted worker took minutes to commit its end).
        acked = self._acked[tp]
        if acked:
            unique = sorted(set(acked))
            if len(unique) != len(acked):
                acked[:] = unique
        offset: int | None = super()._new_offset(tp)
        return offset

    def ack_bundle_members(self, tp: Any, first: int, last: int) -> None:
        """Acknowledge a bundle's offsets before its last (and any gap between its
        records' offsets: compaction or transaction markers) once the bundle's own
        message is acknowledged (:class:`~loopwarden.streams.runtime.bundles.BundleAcks`)."""
        with ack_lock:
            committed = self._committed_offset[tp]
            if committed is not None:
                first = max(first, committed)
            index, acked = self._acked_index[tp], self._acked[tp]
            for offset in range(first, last):
                if offset not in index:
                    index.add(offset)
                    acked.append(offset)

    async def _add_gap(self, tp: Any, offset_from: int, offset_to: int) -> None:
        # Faust records the offsets between two messages as a gap (an interval tree
        # rebuilt on every addition: a quarter of the worker's CPU at 1,000 bundles/s);
        # a bundle's own offsets are acknowledged with it instead
        first = self._bundle_first.get(tp)
        if first is not None and offset_to >= first:
            offset_to = first - 1
        if offset_from <= offset_to:
            await super()._add_gap(tp, offset_from, offset_to)

    def _still_at_fetched_position(self, tp: Any) -> bool:
        fetched = self._positions.get(tp)
        if fetched is None:
            return True
        state, position = fetched
        return bool(state._assignment.active) and state._position == position


class _SinkFlushingProducer(faust_aiokafka.Producer):
    """Faust flushes its producer before every commit: deliver the sink first.

    A failed delivery is retried with backoff until it succeeds, so the commit
    waits (and the agents, once the sink is full) instead of passing it; raising
    here would crash the consumer's commit task and stop the worker.
    """

    logger = SERVICE_LOG  # mode's start/stop narration, quiet at info

    async def flush(self) -> None:
        errors = _app(self).loopwarden.errors
        await _app(self).sink.prepare_commit()  # states kept until the commit join the delivery
        await _app(self).sink.deliver(Backoff(errors.retry_initial_s, errors.retry_max_s, None))
        await super().flush()

    async def on_stop(self) -> None:
        if self._producer is not None:
            try:
                await _app(self).sink.prepare_commit()
                await _app(self).sink.flush()
            except PublishError as exc:  # not committed: reprocessed by the next worker
                log.error("stopping with %s; their inputs will be processed again", exc)
        await super().on_stop()


class TunedTransport(faust_aiokafka.Transport):
    """Faust's aiokafka transport with the tuned consumer and the sink-flushing producer."""

    Consumer = _TunedConsumer
    Producer = _SinkFlushingProducer
