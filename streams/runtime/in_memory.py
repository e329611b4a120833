"""The whole worker in memory: its capabilities over topics in a dict, no broker.

Kafka Streams tests a topology with ``TopologyTestDriver``: records piped into input
topics, processed synchronously by the real processors, read back from output
topics, with a clock to advance for punctuations. :class:`InMemoryWorker` does that
for a worker: for each keyed capability its roles run (the monitor, the fleet, the
guardrails) it drives the same :class:`~loopwarden.streams.runtime.state.core.KeyedCore`
and processor as the worker (built by the capability's own ``for_settings``); for each
capability that declares a batch step (memory's writes and lessons:
:class:`~loopwarden.streams.runtime.capability.BatchProcessing`) it runs that step over
its unread records, bounded as its agent bounds a batch, over the worker's shared
resources (a real LanceDB directory). What they produce goes through the real
:class:`~loopwarden.streams.runtime.outputs.OutputRouter`, dead letters and
:func:`~loopwarden.streams.runtime.outcomes.send_outcome` into
:class:`InMemoryTopics` (keyed and partitioned as Kafka's default partitioner does),
and whatever lands on a topic a capability reads is fed back: re-routes reach their
key's partition of the re-route topic with their origin header, an output that is
another capability's input (a completion the guardrails read, a lesson the memory
role stores) is processed in turn.

- :meth:`InMemoryWorker.publish`, :meth:`~InMemoryWorker.complete_loop`,
  :meth:`~InMemoryWorker.override_guardrails`, :meth:`~InMemoryWorker.remember` and
  :meth:`~InMemoryWorker.remember_many` put a record on its topic as the client builds
  and keys it; :meth:`~InMemoryWorker.send` puts any record on any topic;
- :meth:`~InMemoryWorker.run` processes until no capability has a record left to
  read (every state is written after each record and read back from its snapshot
  by the next, as after a restart: a state that does not survive its snapshot shows);
- :meth:`~InMemoryWorker.advance` moves the :class:`ManualClock` on and runs the
  wall-clock sweeps of quiet partitions that fell due, as the worker's timer does.

What it does not do is the worker's wiring: Faust, the consumer group, commits, the
pause and retry of a transient failure (raised here), batches closed by time, the
HTTP API, the capabilities' own ``after`` hooks (metrics, the loop-health page, HTTP
replies), the leader's timers, and the capabilities that settle against a store
(experience) or are fed otherwise (the analyst, the ingests) — each keeps a broker
test of its own (``tests/integration/test_capability_wiring.py``,
``tests/integration/test_memory_stream.py``). The tool-outage board the fleet and the
monitor share through the tool-outages topic is not followed either.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from loopwarden.errors import is_retriable
from loopwarden.schemas.dead_letter import DeadLetter, SourcePosition
from loopwarden.settings import Settings
from loopwarden.streams.client.event_builder import (
    completion_record,
    encode_event,
    make_action_event,
    override_record,
)
from loopwarden.streams.client.memory_writes import (
    MemoryEncoding,
    memory_record_headers,
    memory_write_record,
    memory_write_records,
)
from loopwarden.streams.runtime.capability import Capability
from loopwarden.streams.runtime.dead_letters import DeadLetters
from loopwarden.streams.runtime.in_memory_topics import InMemoryTopics, ManualClock, StoredRecord
from loopwarden.streams.runtime.outcomes import reroute_to, send_outcome
from loopwarden.streams.runtime.outputs import OutputRouter
from loopwarden.streams.runtime.record_queue import Header
from loopwarden.streams.runtime.records import Record
from loopwarden.streams.runtime.resources import WorkerResources
from loopwarden.streams.runtime.state.core import KeyedCore
from loopwarden.streams.runtime.state.harness import MemoryStore

__all__ = ["InMemoryTopics", "InMemoryWorker", "ManualClock", "StoredRecord"]

log = logging.getLogger(__name__)


class _KeyedInMemory:
    """One keyed capability: its core over a dict store, reading its input topics."""

    def __init__(self, capability: Capability, settings: Settings, worker: InMemoryWorker) -> None:
        declaration, replay = capability.state, capability.replay
        assert declaration is not None and replay is not None  # checked by the worker
        processor = replay.build(settings, partitions=settings.topics.partitions)
        self.capability = capability
        self.core: KeyedCore[Any, Any] = KeyedCore(declaration, processor, MemoryStore(), settings)
        self.inputs = tuple(capability.inputs(settings.topics))
        self.reroute_topic = declaration.reroute_topic(settings.topics)
        self.answer_as = (
            capability.role if capability.answers and settings.adapters.verdicts else None
        )
        self.worker = worker
        self.read: dict[tuple[str, int], int] = {}

    def unread(self) -> Iterator[StoredRecord]:
        """The records of its inputs not read yet, topic by topic, partition by partition."""
        topics = self.worker.topics
        for topic in self.inputs:
            for partition in range(topics.partitions):
                yield from topics.since(topic, partition, self.read.get((topic, partition), 0))

    def handle(self, stored: StoredRecord) -> None:
        """Apply one record as the worker's driver does, under the error policy."""
        self.read[(stored.topic, stored.partition)] = stored.offset + 1
        record = _record(stored)
        core, worker = self.core, self.worker
        core.begin()
        try:
            outcome = core.apply(record)
        except Exception as exc:
            core.revert()
            worker.failed(exc, [record])
            return
        core.done()
        core.commit()  # every state read back from its snapshot by the next record
        send_outcome(worker, outcome, self.reroute_topic, self.answer_as, worker.clock.time())
        core.expire(record.source.partition, worker.clock.monotonic())

    def sweep_quiet(self) -> list[bytes]:
        """The wall-clock sweep of quiet partitions (the worker's timer)."""
        if not self.core.declaration.sweep_quiet_partitions:
            return []
        sweep = self.core.expire_quiet(self.worker.clock.monotonic(), self.worker.clock.time())
        try:  # the sweep only yields (asyncio.sleep(0)) between chunks: no loop needed
            while True:
                sweep.send(None)
        except StopIteration as done:
            return list(done.value)


class _BatchInMemory:
    """One capability that takes its records in batches (memory writes): its batch step
    over its unread records, bounded as its agent bounds a batch."""

    def __init__(self, capability: Capability, settings: Settings, worker: InMemoryWorker) -> None:
        processing = capability.batches
        assert processing is not None  # checked by the worker
        self.capability = capability
        self.step = processing.build(settings, worker.resources)
        self.sizes = processing.sizes(settings)
        self.inputs = tuple(capability.inputs(settings.topics))
        self.worker = worker
        self.read: dict[tuple[str, int], int] = {}

    def unread(self) -> Iterator[list[StoredRecord]]:
        """The unread records of its inputs, every partition's, in batches of at most
        ``max_records`` records and ``max_bytes`` of values (one record at least): what
        its agent takes from all its partitions within one window."""
        topics = self.worker.topics
        batch: list[StoredRecord] = []
        size = 0
        for topic in self.inputs:
            for partition in range(topics.partitions):
                for stored in topics.since(topic, partition, self.read.get((topic, partition), 0)):
                    length = len(stored.value or b"")
                    full = len(batch) >= self.sizes.max_records or (
                        self.sizes.max_bytes is not None and size + length > self.sizes.max_bytes
                    )
                    if batch and full:
                        yield batch
                        batch, size = [], 0
                    batch.append(stored)
                    size += length
        if batch:
            yield batch

    def handle(self, batch: list[StoredRecord]) -> None:
        """Apply one batch as the worker's agent does, under the error policy."""
        for stored in batch:
            self.read[(stored.topic, stored.partition)] = stored.offset + 1
        records = [_record(stored) for stored in batch]
        worker = self.worker
        try:
            outcome = self.step(records)
        except Exception as exc:
            worker.failed(exc, records)
            return
        for letter in outcome.dead_letters:
            worker.dead_letters.send(letter)
        worker.outputs.emit_all(outcome.outputs())


class InMemoryWorker:
    """The keyed capabilities of a worker over :class:`InMemoryTopics` (module docstring)."""

    def __init__(
        self,
        settings: Settings,
        capabilities: Iterable[Capability],
        clock: ManualClock | None = None,
    ) -> None:
        self.settings = settings
        self.clock = clock or ManualClock()
        self.topics = InMemoryTopics(settings.topics.partitions, self.clock)
        self.outputs = OutputRouter(self.topics, settings)
        self.dead_letters = DeadLetters(
            self.topics,
            settings.topics.dead_letter,
            redact_values=settings.limits.redact_dead_letters,
            burst=settings.errors.log_burst,
        )
        self.resources = WorkerResources(settings)
        self.policy = settings.errors.on_processing_error
        running = [c for c in capabilities if c.runs_in(settings)]
        unable = sorted({c.role for c in running if not _runs_in_memory(c)})
        if unable:
            raise ValueError(
                f"the role(s) {', '.join(unable)} cannot run in memory (they neither keep "
                "keyed state nor declare a batch step, or they settle against a store); "
                "give the settings the roles to drive, "
                "e.g. settings.model_copy(update={'roles': frozenset({'monitor'})})"
            )
        self.answering_roles: tuple[str, ...] = tuple(
            sorted({c.role for c in running if c.answers})
        )
        self.capabilities = [
            _KeyedInMemory(c, settings, self) for c in running if c.batches is None
        ]
        self.batch_capabilities = [
            _BatchInMemory(c, settings, self) for c in running if c.batches is not None
        ]
        self._swept_at = self.clock.monotonic()

    # what goes in

    def publish(self, loop_id: str, action_type: str, **payload: Any) -> str:
        """Publish an action as the client does (validated, keyed by its family's root
        loop id, stamped ``published_at`` on the clock); its event id."""
        event = make_action_event(loop_id, action_type, **payload)
        value = encode_event(event, published_at=self.clock.time())
        key = str(event.payload.root(event.loop_id)).encode()
        self.topics.add(self.settings.topics.actions, key, value)
        return event.event_id

    def complete_loop(
        self, loop_id: str, alignment_score: float, drift_score: float, **fields: Any
    ) -> str:
        """Publish a loop completion as the client does; its event id."""
        event_id, key, value = completion_record(loop_id, alignment_score, drift_score, **fields)
        self.topics.add(self.settings.topics.loop_completions, key, value)
        return event_id

    def override_guardrails(self, loop_id: str, override_by: str, **fields: Any) -> str:
        """Publish a guardrail override as the client does; its event id."""
        event_id, key, value = override_record(loop_id, override_by, **fields)
        self.topics.add(self.settings.topics.loop_completions, key, value)
        return event_id

    def remember(self, content: str, *, event_id: str | None = None, **fields: Any) -> str:
        """Publish a memory write as the client does (validated and redacted, keyed by its
        memory id or scope as ``publisher.memory_key`` says); its event id."""
        key_by = self.settings.publisher.memory_key
        written, key, value = memory_write_record(content, key_by, event_id=event_id, **fields)
        self.topics.add(self.settings.topics.memory_writes, key, value)
        return written

    def remember_many(
        self,
        memories: Iterable[Mapping[str, Any]],
        *,
        encoding: MemoryEncoding = "arrow",
        per_record: int | None = None,
        max_record_bytes: int = 512 * 1024,
    ) -> list[str]:
        """Publish many memory writes as the client's ``remember_many`` does (Arrow IPC
        records or JSON arrays, a partition's and scope's writes together); their ids."""
        records, event_ids = memory_write_records(
            list(memories),
            encoding,
            range(self.topics.partitions),
            self.settings.publisher.memory_key,
            per_record,
            max_record_bytes,
        )
        headers = memory_record_headers(encoding)
        for record in records:
            self.topics.add(
                self.settings.topics.memory_writes,
                record.key,
                record.value,
                partition=record.partition,
                headers=headers,
            )
        return event_ids

    def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        *,
        headers: Sequence[Header] = (),
    ) -> StoredRecord:
        """Put any record on any topic (a bad one, a completion, a foreign producer's)."""
        return self.topics.add(topic, key, value, headers=headers)

    # processing

    def run(self, max_records: int = 1_000_000) -> int:
        """Process every record a capability has not read yet, and what that produced
        for another, until none is left; the records processed."""
        processed = 0
        while True:
            before = processed
            for capability in self.capabilities:
                for record in list(capability.unread()):
                    capability.handle(record)
                    processed += 1
                    _bounded(processed, max_records)
            for batched in self.batch_capabilities:
                for batch in list(batched.unread()):
                    batched.handle(batch)
                    processed += len(batch)
                    _bounded(processed, max_records)
            if processed == before:
                return processed

    def failed(self, exc: Exception, records: list[Record]) -> None:
        """Records whose processing raised, under the error policy (``raise``: raised;
        ``skip``: logged; else dead-lettered). A transient failure (a store away) is
        raised whatever the policy: the worker's runner would pause and retry, and
        pausing is the broker tests' (tests/integration/test_memory_stream.py)."""
        if self.policy == "raise" or is_retriable(exc):
            raise exc
        for record in records:
            if self.policy == "skip":
                self.dead_letters.log_skipped(exc, record)
            else:
                self.dead_letters.processing_error(exc, record)

    def advance(self, seconds: float) -> list[bytes]:
        """Move the clock on; the quiet-partition sweeps that fell due run (one per
        capability, as the worker's timer of ``limits.expiry_sweep_interval_s`` would
        by then), and what they made is processed; the keys reclaimed."""
        self.clock.advance(seconds)
        interval = self.settings.limits.expiry_sweep_interval_s
        if self.clock.monotonic() - self._swept_at < interval:
            return []
        self._swept_at = self.clock.monotonic()
        reclaimed = [key for c in self.capabilities for key in c.sweep_quiet()]
        self.run()
        return reclaimed

    # what comes out

    def output(self, name: str) -> list[Any]:
        """The records of named output ``name`` (``warnings``, ``decisions`` …) as JSON."""
        return self.topics.values(self.outputs.topic(name))

    def dead_lettered(self) -> list[DeadLetter]:
        """The dead letters sent, read back as the client's subscriber reads them."""
        records = self.topics.records(self.settings.topics.dead_letter)
        return [DeadLetter.from_record(r.value or b"", r.key, r.headers) for r in records]

    def state(self, role: str, key: str) -> Any:
        """The state capability ``role`` keeps for ``key`` (None: none)."""
        for capability in self.capabilities:
            if capability.capability.role == role:
                return capability.core.load(key)
        raise KeyError(f"no capability with role {role!r} runs here")

    def reroute(self, topic: str, reroutes: Iterable[Any]) -> None:
        """Re-routed events onto their key's partition of ``topic`` (the worker's way)."""
        reroute_to(self.topics, topic, reroutes)


def _record(stored: StoredRecord) -> Record:
    return Record(
        stored.value,
        stored.key,
        list(stored.headers),
        SourcePosition(stored.topic, stored.partition, stored.offset, stored.timestamp_ms),
    )


def _bounded(processed: int, max_records: int) -> None:
    if processed > max_records:
        raise RuntimeError(f"more than {max_records} records processed: a feedback loop?")


def _runs_in_memory(capability: Capability) -> bool:
    if capability.batches is not None:
        return True
    replay = capability.replay
    return capability.state is not None and replay is not None and replay.settle is None
