"""The whole worker in memory: its keyed capabilities over topics in a dict, no broker.

Kafka Streams tests a topology with ``TopologyTestDriver``: records piped into input
topics, processed synchronously by the real processors, read back from output
topics, with a clock to advance for punctuations. :class:`InMemoryWorker` does that
for a worker: for each keyed capability its roles run (the monitor, the fleet, the
guardrails) it drives the same :class:`~loopwarden.streams.runtime.state.core.KeyedCore`
and processor as the worker (built by the capability's own ``for_settings``), sends
what they produce through the real
:class:`~loopwarden.streams.runtime.outputs.OutputRouter`, dead letters and
:func:`~loopwarden.streams.runtime.outcomes.send_outcome` into
:class:`InMemoryTopics` (keyed and partitioned as Kafka's default partitioner does),
and feeds back whatever lands on a topic a capability reads: re-routes reach their
key's partition of the re-route topic with their origin header, an output that is
another capability's input (a completion the guardrails read) is processed in turn.

- :meth:`InMemoryWorker.publish`, :meth:`~InMemoryWorker.complete_loop` and
  :meth:`~InMemoryWorker.override_guardrails` put an event on its topic as the client
  builds and keys it; :meth:`~InMemoryWorker.send` puts any record on any topic;
- :meth:`~InMemoryWorker.run` processes until no capability has a record left to
  read (every state is written after each record and read back from its snapshot
  by the next, as after a restart: a state that does not survive its snapshot shows);
- :meth:`~InMemoryWorker.advance` moves the :class:`ManualClock` on and runs the
  wall-clock sweeps of quiet partitions that fell due, as the worker's timer does.

What it does not do is the worker's wiring: Faust, the consumer group, commits, the
HTTP API, the capabilities' own ``after`` hooks (metrics, the loop-health page,
HTTP replies) and the capabilities that settle against a store (experience) or keep
no keyed state (memory, the analyst, the ingests) — each keeps a broker test of its
own (``tests/integration/test_capability_wiring.py``). The tool-outage board the fleet
and the monitor share through the tool-outages topic is not followed either.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from loopwarden.schemas import codec
from loopwarden.schemas.dead_letter import DeadLetter, SourcePosition
from loopwarden.schemas.positions import default_partition
from loopwarden.settings import Settings
from loopwarden.streams.client.event_builder import (
    completion_record,
    encode_event,
    make_action_event,
    override_record,
)
from loopwarden.streams.runtime.capability import Capability
from loopwarden.streams.runtime.dead_letters import DeadLetters
from loopwarden.streams.runtime.outcomes import reroute_to, send_outcome
from loopwarden.streams.runtime.outputs import OutputRouter
from loopwarden.streams.runtime.record_queue import Header
from loopwarden.streams.runtime.records import Record
from loopwarden.streams.runtime.state.core import KeyedCore
from loopwarden.streams.runtime.state.harness import MemoryStore

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class StoredRecord:
    """One record of an in-memory topic."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]
    timestamp_ms: int

    def json(self) -> Any:
        """The value decoded as JSON."""
        return codec.loads(self.value) if self.value is not None else None


class ManualClock:
    """The worker's clocks, moved on by the test: a monotonic one and the wall clock."""

    def __init__(self, wall: float | None = None) -> None:
        self._monotonic = 0.0
        self._wall = time.time() if wall is None else wall

    def monotonic(self) -> float:
        """Seconds on the monotonic clock (starts at 0)."""
        return self._monotonic

    def time(self) -> float:
        """The wall clock (seconds since the epoch)."""
        return self._wall

    def advance(self, seconds: float) -> None:
        """Move both clocks ``seconds`` on."""
        if seconds < 0:
            raise ValueError(f"a clock does not go back ({seconds} s)")
        self._monotonic += seconds
        self._wall += seconds


class InMemoryTopics:
    """Topics of ``partitions`` partitions in memory, written as the worker's sink is
    (``add``: a record keyed, partitioned by its key unless told its partition)."""

    def __init__(self, partitions: int, clock: ManualClock) -> None:
        if partitions < 1:
            raise ValueError(f"a topic has at least one partition, not {partitions}")
        self.partitions = partitions
        self.clock = clock
        self._topics: dict[str, list[list[StoredRecord]]] = {}

    def add(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        *,
        partition: int | None = None,
        headers: Sequence[Header] = (),
    ) -> StoredRecord:
        """Append one record (``partition=None``: Kafka's default partitioner; a record
        without a key goes to partition 0)."""
        if partition is None:
            partition = default_partition(key, self.partitions) if key is not None else 0
        if not 0 <= partition < self.partitions:
            raise ValueError(f"{topic} has partitions 0-{self.partitions - 1}, not {partition}")
        log_ = self._partitions(topic)[partition]
        stored = StoredRecord(
            topic,
            partition,
            len(log_),
            key,
            value,
            tuple(headers),
            int(self.clock.time() * 1000),
        )
        log_.append(stored)
        return stored

    def partition(self, topic: str, partition: int) -> list[StoredRecord]:
        """The records of one partition, by offset."""
        found = self._topics.get(topic)
        return list(found[partition]) if found is not None else []

    def since(self, topic: str, partition: int, offset: int) -> list[StoredRecord]:
        """The records of one partition from ``offset`` on."""
        found = self._topics.get(topic)
        return found[partition][offset:] if found is not None else []

    def records(self, topic: str) -> list[StoredRecord]:
        """Every record of ``topic``, partition by partition, each by offset."""
        return [record for records in self._topics.get(topic, ()) for record in records]

    def values(self, topic: str) -> list[Any]:
        """Every record's value of ``topic`` as JSON (partition by partition)."""
        return [record.json() for record in self.records(topic)]

    def names(self) -> list[str]:
        """The topics written so far."""
        return sorted(self._topics)

    def _partitions(self, topic: str) -> list[list[StoredRecord]]:
        found = self._topics.get(topic)
        if found is None:
            found = self._topics[topic] = [[] for _ in range(self.partitions)]
        return found


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
        self.policy = settings.errors.on_processing_error
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
        record = Record(
            stored.value,
            stored.key,
            list(stored.headers),
            SourcePosition(stored.topic, stored.partition, stored.offset, stored.timestamp_ms),
        )
        core, worker = self.core, self.worker
        core.begin()
        try:
            outcome = core.apply(record)
        except Exception as exc:
            core.revert()
            if self.policy == "raise":
                raise
            if self.policy == "skip":
                worker.dead_letters.log_skipped(exc, record)
            else:
                worker.dead_letters.processing_error(exc, record)
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
        running = [c for c in capabilities if c.runs_in(settings)]
        unable = sorted({c.role for c in running if not _runs_in_memory(c)})
        if unable:
            raise ValueError(
                f"the role(s) {', '.join(unable)} cannot run in memory (they keep no keyed "
                "state or settle against a store); give the settings the roles to drive, "
                "e.g. settings.model_copy(update={'roles': frozenset({'monitor'})})"
            )
        self.answering_roles: tuple[str, ...] = tuple(
            sorted({c.role for c in running if c.answers})
        )
        self.capabilities = [_KeyedInMemory(c, settings, self) for c in running]
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
            progressed = False
            for capability in self.capabilities:
                for record in list(capability.unread()):
                    capability.handle(record)
                    processed += 1
                    progressed = True
                    if processed > max_records:
                        raise RuntimeError(
                            f"more than {max_records} records processed: a feedback loop?"
                        )
            if not progressed:
                return processed

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


def _runs_in_memory(capability: Capability) -> bool:
    replay = capability.replay
    return capability.state is not None and replay is not None and replay.settle is None
