"""Input partitions held back until they stand at their committed offsets, per assignment.

After a rebalance Faust resumes the input partitions just before it seeks them to
their committed offsets (see :mod:`..workarounds`); the worker holds each input
partition of a new assignment back until that seek is done. The seek awaits the
broker, and a new rebalance can arrive meanwhile (two workers joining a second
apart): the seek of the earlier assignment then ends while the later one is still
recovering its tables. Released then, the later assignment's partitions were read
before their tables held the changelog — records were applied to empty states
(loops counted from one again, issue 72). :class:`SeekGate` ties each seek to the
assignment it began under: a seek that ends after a newer assignment releases
nothing; that assignment's own seek releases its partitions.

Faust also seeks to the committed offsets from its fetch loop whenever it finds the
flow stopped (``Consumer.getmany``: "getmany called while flow not active"), which is
the case from the start of every rebalance until its table recovery reads the
changelogs. That seek released the partitions too, and a worker given back a
partition applied its records to an empty table while recovery was still reading it
(the first record of partition 0 found 0 of its keys; a scale-in reset every loop
there). Only the seek that ends a recovery releases now: Faust makes it with the flow
running; a seek begun with the flow stopped releases nothing (``releases=False``),
unless the app has no table to recover.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

P = TypeVar("P", bound=Hashable)


@dataclass(frozen=True, slots=True)
class SeekTicket(Generic[P]):
    """A seek under way: the assignment it began under and the partitions it holds."""

    assignment: int
    partitions: frozenset[P]
    releases: bool = True
    """False for a seek that must not release (begun during a rebalance's recovery)."""


@dataclass(slots=True)
class SeekGate(Generic[P]):
    """The input partitions of the current assignment not yet at their commit."""

    held: set[P] = field(default_factory=set)
    assignment: int = 0
    """How many assignments the consumer received (each starts its own seek)."""
    stale_seeks: int = 0
    """Seeks that ended after a newer assignment and released nothing."""
    early_seeks: int = 0
    """Seeks begun before the recovery ended (the flow stopped): they released nothing."""

    def assigned(self, inputs: Iterable[P]) -> None:
        """A new assignment: every one of its input partitions waits for its seek."""
        self.assignment += 1
        self.held = set(inputs)

    def holds(self, partition: P) -> bool:
        """True while ``partition`` must not be read (its seek is not done)."""
        return partition in self.held

    def seek_begins(self, releases: bool = True) -> SeekTicket[P]:
        """A seek to the committed offsets starts for the partitions held now
        (``releases=False``: it moves them but must not release them)."""
        return SeekTicket(self.assignment, frozenset(self.held), releases)

    def seek_ends(self, ticket: SeekTicket[P]) -> frozenset[P]:
        """The seek of ``ticket`` ended (done or failed): the partitions it releases —
        none when a newer assignment came meanwhile."""
        if ticket.assignment != self.assignment:
            self.stale_seeks += 1
            return frozenset()
        if not ticket.releases:
            self.early_seeks += 1
            return frozenset()
        self.held -= ticket.partitions
        return ticket.partitions
