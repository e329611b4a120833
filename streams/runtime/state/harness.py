"""A keyed capability without a broker: the kit's core, driven in memory.

What :func:`~loopwarden.streams.runtime.keyed_runner.run_keyed` does on a worker,
:class:`KeyedHarness` does over a dict, with the same
:class:`~loopwarden.streams.runtime.state.core.KeyedCore`, so a capability's author
tests a processor plus its declaration the way Faust's ``agent.test_context()`` or
Quix Streams' ``StreamingDataFrame.test()`` test a pipeline:

- each record is processed with the states the table holds, **restored from their
  snapshots** (``declaration.restore``, after every record's write), as a worker does
  after a restart or a rebalance — a state that does not survive its snapshot shows up;
- re-routed events are delivered to their key's partition of the re-route topic,
  with their origin header, the way the worker's re-route topic brings them back;
- outputs, dead letters and re-routes are kept, in order, for the test to read;
- a record whose processing raises is reverted, as the worker's error policy does,
  and the exception re-raised; with ``settle`` (a batched capability's I/O step),
  :meth:`KeyedHarness.feed_batch` settles a batch's outcomes as the worker does;
- :meth:`KeyedHarness.expire` runs the idle sweep of a partition.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Generic

from loopwarden.schemas.dead_letter import DeadLetter, SourcePosition
from loopwarden.settings import Settings
from loopwarden.streams.runtime.state.core import KeyedCore
from loopwarden.streams.runtime.state.protocol import (
    KeyedDeclaration,
    KeyedProcessor,
    KeyedRecord,
    Out,
    S,
    Settle,
)
from loopwarden.streams.runtime.state.reroute import Reroute


class MemoryStore:
    """Snapshots in a dict, with the tombstones a changelog would carry."""

    def __init__(self) -> None:
        self.data: dict[bytes, bytes] = {}
        self.changelog: list[tuple[bytes, bytes | None, int]] = []

    def get(self, key: bytes) -> bytes | None:
        """The stored snapshot, or None."""
        return self.data.get(key)

    def put(self, key: bytes, value: bytes, partition: int) -> None:
        """Store a snapshot (and log it, as a changelog record of ``partition``)."""
        self.data[key] = value
        self.changelog.append((key, value, partition))

    def delete(self, key: bytes, partition: int) -> None:
        """Delete a key (a tombstone)."""
        self.data.pop(key, None)
        self.changelog.append((key, None, partition))

    def keys(self) -> Iterable[bytes]:
        """The keys stored."""
        return list(self.data)


class KeyedHarness(Generic[S, Out]):
    """Feeds records to a :class:`KeyedCore` as the worker would (module docstring)."""

    def __init__(
        self,
        declaration: KeyedDeclaration[S],
        processor: KeyedProcessor[Out],
        settings: Settings | None = None,
        settle: Settle[Out] | None = None,
    ) -> None:
        self.settings = settings or Settings()
        self.store = MemoryStore()
        self.core: KeyedCore[S, Out] = KeyedCore(declaration, processor, self.store, self.settings)
        self.settle = settle
        self.outputs: list[tuple[str, Any]] = []
        self.dead_letters: list[DeadLetter] = []
        self.reroutes: list[Reroute] = []
        self.offsets: dict[tuple[str, int], int] = {}

    @property
    def processor(self) -> KeyedProcessor[Out]:
        """The capability's processor."""
        return self.core.processor

    def load(self, key: str) -> S | None:
        """A key's state as the next record would see it (restored from its snapshot)."""
        return self.core.load(key)

    @property
    def table(self) -> dict[bytes, bytes]:
        """Each key's snapshot, as the worker's table holds it."""
        return self.store.data

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
        """Process one record of ``topic`` (the declaration's home topic by default) and
        write its states; re-routes it produces are fed back at once, from the re-route
        topic. A record that raises is reverted and the exception re-raised."""
        core = self.core
        core.begin()
        outcome = self._apply(value, key, partition, topic, headers, timestamp_ms)
        core.done()
        core.commit()
        self._publish(outcome)
        return outcome

    def feed_batch(
        self, records: Iterable[tuple[bytes | None, bytes | None]], partition: int = 0
    ) -> list[Out]:
        """Process (value, key) records of the home topic's ``partition`` as one batch,
        then ``settle`` their outcomes (its outputs follow theirs) and write the states.
        A batch whose processing or settling raises is reverted whole."""
        core = self.core
        core.begin()
        outcomes = [self._apply(value, key, partition) for value, key in records]
        settled = list(self._settled(outcomes))
        for outcome in outcomes:
            core.keep(outcome, partition)
        core.done()
        core.commit()
        for outcome in outcomes:
            self._publish(outcome)
        self.outputs.extend(settled)
        return outcomes

    def expire(self, partition: int = 0, now_monotonic: float = float("inf")) -> list[bytes]:
        """Run the idle sweep of ``partition`` (due at ``now_monotonic``); the keys reclaimed."""
        return self.core.expire(partition, now_monotonic)

    def named(self, output: str) -> list[Any]:
        """The outputs of one name (``warnings``, ``decisions`` …), in order."""
        return [value for name, value in self.outputs if name == output]

    def _apply(
        self,
        value: bytes | None,
        key: bytes | None,
        partition: int,
        topic: str | None = None,
        headers: Sequence[tuple[str, bytes]] = (),
        timestamp_ms: int | None = None,
    ) -> Out:
        topic = topic or self.core.home
        offset = self.offsets.get((topic, partition), 0)
        self.offsets[(topic, partition)] = offset + 1
        source = SourcePosition(topic, partition, offset, timestamp_ms)
        try:
            return self.core.apply(KeyedRecord(value, key, headers, source))
        except BaseException:
            self.core.revert()
            raise

    def _settled(self, outcomes: list[Out]) -> Iterable[tuple[str, Any]]:
        if self.settle is None:
            return ()
        try:
            return list(self.settle(outcomes))
        except BaseException:
            self.core.revert()
            raise

    def _publish(self, outcome: Out) -> None:
        self.outputs.extend(outcome.outputs())
        self.dead_letters.extend(outcome.dead_letters)
        self.reroutes.extend(outcome.reroutes)
        reroute_topic = self.core.declaration.reroute_topic(self.settings.topics)
        for moved in outcome.reroutes:
            self.feed(
                moved.value, moved.key, moved.partition, topic=reroute_topic, headers=moved.headers
            )
