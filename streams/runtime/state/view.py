"""The states one record applies to, looked up the same way for every keyed capability.

The kit hands each record a :class:`StateView` (built once per record, with the
declaration's idle TTL); the processor asks it for a key's state instead of reading
the store, and puts what it changed in its ``changed``. The view looks in one order —
the copy this record already changed, else the kit's (pending, cached or stored) —
makes a new state when there is none, and a fresh one when the key was idle longer
than its TTL of *event* time (so the worker, ``detect`` and ``replay`` decide expiry
alike, whatever the wall clock did). It remembers every key it was asked for (its
``touched``): the keys a failed record may have half-updated, which the kit puts back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from loopwarden.streams.runtime.state.protocol import KeyedDeclaration, KeyedState

    S = TypeVar("S", bound=KeyedState)
else:
    S = TypeVar("S")


class StateView(Generic[S]):
    """One record's access to its capability's states (module docstring)."""

    __slots__ = ("_loaded", "changed", "declaration", "idle_ttl_s", "load", "partition", "touched")

    def __init__(
        self,
        declaration: KeyedDeclaration[S],
        load: Callable[[str], S | None],
        idle_ttl_s: float,
        partition: int,
    ) -> None:
        """``load`` reads a stored state (None: none)."""
        self.declaration = declaration
        self.load = load
        self.changed: dict[str, S | None] = {}
        """The states this record changed, by key (None: ended), which the processor
        fills as it goes: its outcome's ``states``."""
        self.idle_ttl_s = idle_ttl_s
        self.partition = partition
        self.touched: set[str] = set()
        self._loaded: dict[str, S | None] = {}

    def stored(self, key: str) -> S | None:
        """``key``'s state as this record left it so far, else as stored, else None
        (no TTL applied: for states that do not expire by event)."""
        changed = self.changed
        if key in changed:
            return changed[key]
        loaded = self._loaded
        if key not in loaded:
            self.touched.add(key)
            loaded[key] = self.load(key)
        return loaded[key]

    def current(self, key: str, occurred_at: float) -> S:
        """The state of ``key`` an event of ``occurred_at`` applies to, on this
        record's partition: new when there is none, fresh after an idle TTL."""
        state = self.stored(key)
        declaration = self.declaration
        fresh = declaration.fresh
        if fresh is None:
            raise TypeError(f"{declaration.table}: the declaration makes no fresh states")
        if state is None:
            state = fresh(key, None)
        else:
            last = declaration.seen_at(state)
            if last is not None and occurred_at - last > self.idle_ttl_s:
                state = fresh(key, state)
        state.partition = self.partition
        return state
