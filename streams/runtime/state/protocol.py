"""What a keyed capability gives the kit, and what the kit gives it back (no Faust here).

A capability that keeps state per key hands the kit a **processor** (its decisions:
a :class:`KeyedRecord` and its states in, an outcome out) and a :class:`KeyedDeclaration`
(how its state is named, stored, restored and expired). The kit's core
(:class:`~loopwarden.streams.runtime.state.core.KeyedCore`) does the rest, driven by
the worker (:mod:`~loopwarden.streams.runtime.keyed_runner`), in memory by a test
(:mod:`.harness`) or over a dict by the offline entry points (:mod:`.offline`). It
hands each record a :class:`~loopwarden.streams.runtime.state.view.StateView` built
once, with the declaration's idle TTL, and remembers the keys it touched itself.

Each record's outcome is a :class:`KeyedOutcome`: the states to write back (the view's
``changed``), dead letters, re-routes, what was seen, and the capability's named
outputs, declared once in its ``OUTPUTS``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Literal, Protocol, TypeVar

from loopwarden.schemas.dead_letter import DeadLetter, SourcePosition
from loopwarden.schemas.positions import Origin
from loopwarden.settings import Settings, TopicSettings
from loopwarden.streams.runtime.state.reroute import Reroute
from loopwarden.streams.runtime.state.view import StateView


@dataclass(frozen=True, slots=True)
class KeyedRecord:
    """A record as a keyed processor sees it: its bytes, its headers, where it was read
    and, for a re-routed one, where its events came from (``origin``, from its headers).
    The worker's :class:`~loopwarden.streams.runtime.records.Record` is one."""

    value: bytes | None
    key: bytes | None
    headers: Sequence[Any]
    source: SourcePosition
    origin: Origin | None = None


class KeyedState(Protocol):
    """What the kit needs of a state: its partition and its snapshot."""

    partition: int

    def snapshot(self) -> bytes: ...


S = TypeVar("S", bound=KeyedState)


@dataclass(slots=True)
class KeyedOutcome(Generic[S]):
    """What one record produced; each capability adds its own outputs to it."""

    states: dict[str, S | None] = field(default_factory=dict)
    """The states to write back, by key (None: the key's state has ended)."""
    dead_letters: list[DeadLetter] = field(default_factory=list)
    reroutes: list[Reroute] = field(default_factory=list)
    seen: list[tuple[str, str]] = field(default_factory=list)
    """(event id, loop id) of every event applied or skipped here (not re-routed)."""
    events: int = 0
    """Events applied."""

    OUTPUTS: ClassVar[tuple[tuple[str, str], ...]] = ()
    """(output name, the outcome's list of them), in the order they are sent."""

    def outputs(self) -> Iterator[tuple[str, Any]]:
        """The named outputs (output name, value), in the order of ``OUTPUTS``."""
        for name, field_name in self.OUTPUTS:
            for value in getattr(self, field_name):
                yield name, value


Out = TypeVar("Out", bound=KeyedOutcome[Any])
Out_co = TypeVar("Out_co", bound=KeyedOutcome[Any], covariant=True)


class KeyedProcessor(Protocol[Out_co]):
    """A capability's pure processor: a record and its states in, an outcome out."""

    def process(self, record: KeyedRecord, states: StateView[Any]) -> Out_co:
        """Apply one record to ``states`` (the kit's view of them: what this record
        changed, else written, pending or cached); the outcome's ``states`` is the
        view's ``changed``."""
        ...


@dataclass(frozen=True, slots=True)
class KeyedDeclaration(Generic[S]):
    """How a capability keeps its state: the kit does the rest (module docstring)."""

    table: str
    """The Faust table's name (its changelog is ``<app id>-<table>-changelog``)."""
    help: str
    """The table's description."""
    home_topic: Callable[[TopicSettings], str]
    """The topic whose partitions the keys live on; a record from any other topic of
    the capability's is a re-routed one (its origin is in its headers)."""
    reroute_topic: Callable[[TopicSettings], str]
    """Where an event of another partition's key is sent."""
    restore: Callable[[str, bytes], S]
    """A stored snapshot (key as text) decoded."""
    peek_expiry: Callable[[bytes], tuple[int, float]]
    """A stored snapshot's partition and event time, read cheaply (for the sweeps)."""
    seen_at: Callable[[S], float | None]
    """A state's event time (its last event's; None: it saw none yet, it is never idle)."""
    idle_ttl_s: Callable[[Settings], float]
    """How long (event time) a key may stay idle before its state starts afresh and
    may be reclaimed."""
    ttl_setting: str
    """The setting of that TTL, named in the reclaim log line."""
    noun: str = "key(s)"
    """What a key is, in log lines: ``loop(s)``, ``famil(ies)``."""
    writes: Literal["at_commit", "every_record"] = "at_commit"
    """When states reach the table: once per offset commit, or with every record (in
    batches: at the end of every batch, so a failed batch reverts nothing older)."""
    sweep_quiet_partitions: bool = False
    """Also reclaim idle keys of partitions that receive nothing, on the wall clock."""
    fresh: Callable[[str, S | None], S] | None = None
    """A new state for a key: none stored (None), or one idle past the TTL (what it
    keeps of the idle one, such as its applied positions, is the capability's). None:
    the capability makes its states itself (:meth:`StateView.current` is not for it)."""
    cache_states: Callable[[Settings], int] = lambda settings: 0
    """How many decoded states the worker keeps beyond the pending ones (LRU), so a
    busy key's snapshot is not decoded again after each write."""

    def view(
        self, load: Callable[[str], S | None], idle_ttl_s: float, partition: int
    ) -> StateView[S]:
        """The states one record of ``partition`` applies to (see :class:`StateView`)."""
        return StateView(self, load, idle_ttl_s, partition)


Settle = Callable[[list[Out]], Iterable[tuple[str, Any]]]
"""A batch's outcomes → more named outputs, after I/O (run in a thread by the worker)."""
