"""A keyed capability's states in a dict, for what processes records outside a worker.

``loopwarden detect``, the audit replayer, the evaluations and the benchmarks run a
processor over a file or a dataset, one record after another, with no table, no
snapshots and no sweeps. :class:`OfflineStates` is their one way to do it: each record
gets its :class:`~loopwarden.streams.runtime.state.view.StateView` as the kit's core
gives it (the same declaration, the TTL the caller chose), and the states it changed
replace the dict's (an ended one is removed)::

    loops = OfflineStates(LOOP_STATES, idle_ttl_s=settings.limits.idle_loop_ttl_s)
    outcome = loops.apply(processor, value, key, SourcePosition("file", 0, line))

For a capability's behaviour as a worker runs it (snapshots restored after each record,
re-routes delivered, reverts, sweeps), use :class:`~.harness.KeyedHarness` or the
in-memory worker.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Generic

from loopwarden.schemas.dead_letter import SourcePosition
from loopwarden.schemas.positions import Origin
from loopwarden.settings import Settings
from loopwarden.streams.runtime.state.protocol import (
    KeyedDeclaration,
    KeyedProcessor,
    KeyedRecord,
    Out,
    S,
)


class OfflineStates(Generic[S]):
    """One capability's live states by key, applied to record by record (module docstring)."""

    __slots__ = ("declaration", "idle_ttl_s", "states")

    def __init__(self, declaration: KeyedDeclaration[S], idle_ttl_s: float = float("inf")) -> None:
        """``idle_ttl_s``: how long (event time) a key may stay idle before its state
        starts afresh; by default never (a whole run is one stretch)."""
        self.declaration = declaration
        self.idle_ttl_s = idle_ttl_s
        self.states: dict[str, S] = {}

    @classmethod
    def for_settings(cls, declaration: KeyedDeclaration[S], settings: Settings) -> OfflineStates[S]:
        """With the worker's TTL for ``settings`` (the declaration's setting)."""
        return cls(declaration, declaration.idle_ttl_s(settings))

    def get(self, key: str) -> S | None:
        """``key``'s state, or None."""
        return self.states.get(key)

    def apply(
        self,
        processor: KeyedProcessor[Out],
        value: bytes | None,
        key: bytes | None,
        source: SourcePosition,
        *,
        origin: Origin | None = None,
        headers: Sequence[Any] = (),
    ) -> Out:
        """Process one record with these states and keep what it changed; its outcome."""
        view = self.declaration.view(self.states.get, self.idle_ttl_s, source.partition)
        outcome = processor.process(KeyedRecord(value, key, headers, source, origin), view)
        states = self.states
        for changed_key, state in outcome.states.items():
            if state is None:
                states.pop(changed_key, None)
            else:
                states[changed_key] = state
        return outcome

    def __len__(self) -> int:
        return len(self.states)
