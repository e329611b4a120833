"""The fleet detectors' interface: one family event in, maybe one finding out.

A fleet detector is the family-level twin of a spin detector
(:mod:`loopwarden.agents.spin.detector`): it sees every event of every loop of
one family, in the order the family's worker applies them, keeps its own small
state (snapshotted with the family) and reports a :class:`FleetFinding`; the
:class:`~loopwarden.agents.fleet.family_monitor.FamilyMonitor` puts findings on
the family's ladder and tells every live loop.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

from loopwarden.agents.fleet.state import FamilyState, LoopNode
from loopwarden.schemas.events import ActionEvent
from loopwarden.settings import FleetSettings


@dataclass(frozen=True, slots=True)
class FamilyObservation:
    """One applied event with its family's context."""

    event: ActionEvent
    node: LoopNode
    """The event's loop, updated with this event."""
    family: FamilyState
    settings: FleetSettings
    joined: bool
    """The loop's first event in the family."""
    task_known: bool
    """This event made the loop's task known (the first event that carried one)."""

    @property
    def loop_id(self) -> str:
        return self.event.loop_id


@dataclass(frozen=True, slots=True)
class FleetFinding:
    """What a fleet detector found about the whole family."""

    kind: str
    reason: str
    suggestions: tuple[str, ...]
    event_ids: tuple[str, ...]
    """The events behind the finding, oldest first (they may be of several loops)."""
    agents: tuple[str, ...]
    count: int
    stop: bool = False
    """Stop the family now, whatever its ladder says (a budget's stop level)."""


class FleetDetector(ABC):
    """Per-family state of one pattern across loops."""

    name: ClassVar[str]

    @abstractmethod
    def observe(self, seen: FamilyObservation) -> FleetFinding | None:
        """Record one event; a finding when the pattern is present."""

    @abstractmethod
    def snapshot(self) -> Any:
        """The state as plain JSON values."""

    @classmethod
    @abstractmethod
    def restore(cls, data: Any) -> FleetDetector:
        """Inverse of :meth:`snapshot`."""


REGISTRY: dict[str, type[FleetDetector]] = {}


def register(cls: type[FleetDetector]) -> type[FleetDetector]:
    """Class decorator: make a fleet detector available by its ``name``."""
    REGISTRY[cls.name] = cls
    return cls
