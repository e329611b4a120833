"""A keyed capability without a broker: its processor and declaration, fed records.

What :func:`~loopwarden.streams.runtime.state.keyed.run_keyed` does on a worker,
:class:`KeyedHarness` does in memory, so a capability's author tests a processor
plus its declaration the way Faust's ``agent.test_context()`` or Quix Streams'
``StreamingDataFrame.test()`` test a pipeline:

- each record is processed with the states the table holds, **restored from their
  snapshots** (``declaration.restore``), as a worker does after a restart or a
  rebalance — a state that does not survive its snapshot shows up here;
- the states an outcome returns are written back as snapshots;
- re-routed events are delivered to their key's partition of the re-route topic,
  with their origin header, the way the worker's re-route topic brings them back;
- outputs, dead letters and re-routes are kept, in order, for the test to read;
- a key mapped to None leaves the table; with ``settle`` (a batched capability's I/O
  step), :meth:`KeyedHarness.feed_batch` settles a batch's outcomes as the worker does.

Expiry and the commit cadence are the worker's (tested with a broker); here every
record's states are written at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from loopwarden.schemas.dead_letter import DeadLetter, SourcePosition
from loopwarden.schemas.positions import origin_from_headers
from loopwarden.settings import TopicSettings
from loopwarden.streams.runtime.state.keyed import (
    KeyedDeclaration,
    KeyedOutcome,
    KeyedProcessor,
    KeyedState,
    Settle,
)
from loopwarden.streams.runtime.state.reroute import Reroute

S = TypeVar("S", bound=KeyedState)
Out = TypeVar("Out", bound=KeyedOutcome[Any])


@dataclass
class KeyedHarness(Generic[S, Out]):
    """Feeds records to ``processor`` as the kit would (module docstring)."""

    declaration: KeyedDeclaration[S]
    processor: KeyedProcessor[Out]
    topics: TopicSettings = field(default_factory=TopicSettings)
    table: dict[bytes, bytes] = field(default_factory=dict)
    """Each key's snapshot, as the worker's table holds it."""
    outputs: list[tuple[str, Any]] = field(default_factory=list)
    dead_letters: list[DeadLetter] = field(default_factory=list)
    reroutes: list[Reroute] = field(default_factory=list)
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    settle: Settle[Out] | None = None

    def load(self, key: str) -> S | None:
        """A key's state, restored from its snapshot (None when the table has none)."""
        data = self.table.get(key.encode())
        return self.declaration.restore(key, data) if data else None

    def feed(
        self,
        value: bytes | None,
        key: bytes | None = None,
        partition: int = 0,
        *,
        topic: str | None = None,
        headers: Sequence[tuple[str, bytes]] = (),
        timestamp_ms: int | None = None,
    ) -> Out:
        """Process one record of ``topic`` (the declaration's home topic by default);
        re-routes it produces are fed back at once, from the re-route topic."""
        home = self.declaration.home_topic(self.topics)
        topic = topic or home
        offset = self.offsets.get((topic, partition), 0)
        self.offsets[(topic, partition)] = offset + 1
        source = SourcePosition(topic, partition, offset, timestamp_ms)
        origin = origin_from_headers(headers) if topic != home else None
        outcome = self.processor.process(value, key, source, self.load, origin, headers)
        self._write(outcome)
        self.outputs.extend(outcome.outputs())
        self.dead_letters.extend(outcome.dead_letters)
        self.reroutes.extend(outcome.reroutes)
        reroute_topic = self.declaration.reroute_topic(self.topics)
        for moved in outcome.reroutes:
            self.feed(
                moved.value, moved.key, moved.partition, topic=reroute_topic, headers=moved.headers
            )
        return outcome

    def feed_batch(
        self, records: Iterable[tuple[bytes | None, bytes | None]], partition: int = 0
    ) -> list[Out]:
        """Process (value, key) records of the home topic's ``partition`` as one batch,
        then ``settle`` their outcomes (its outputs follow theirs) and write the states
        again (settling may change them)."""
        outcomes = [self.feed(value, key, partition) for value, key in records]
        if self.settle is not None:
            self.outputs.extend(self.settle(outcomes))
        for outcome in outcomes:
            self._write(outcome)
        return outcomes

    def _write(self, outcome: Out) -> None:
        for name, state in outcome.states.items():
            if state is None:
                self.table.pop(name.encode(), None)
            else:
                self.table[name.encode()] = state.snapshot()

    def named(self, output: str) -> list[Any]:
        """The outputs of one name (``warnings``, ``decisions`` …), in order."""
        return [value for name, value in self.outputs if name == output]
