"""The detector interface: one module per spin pattern, registered with the monitor.

A detector sees each applied action with the loop's context (:class:`Observation`)
and returns a :class:`Finding` or None; it keeps its own per-loop state and
turns it into plain JSON values (``snapshot``/``restore``), which the loop
state stores under the detector's ``name``. The monitor turns findings into
warnings (one builder, :mod:`loopwarden.agents.findings`), decides the
reflection level and asks for the Layer 2 semantic check. Adding a detector is
one module and one :func:`register` call.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from loopwarden.agents.spin.pattern_texts import pattern_timeline
from loopwarden.schemas.events import ActionEvent
from loopwarden.settings import DetectionSettings


@dataclass(frozen=True, slots=True)
class Observation:
    """One applied action with the loop's context."""

    event: ActionEvent
    seq: int
    """The action's number in the loop (1-based, applied actions only)."""
    iteration: int
    window: list[dict[str, Any]]
    """The loop's recent actions, oldest first, this one last."""
    threshold: int
    """The loop's Layer 1 threshold (its override or ``detection.spin_threshold``)."""
    settings: DetectionSettings
    signature: str = ""
    """The call's signature (:mod:`~loopwarden.agents.spin.signature`), when a detector
    in use needs it."""
    result_key: str | None = None
    """A digest of what the call returned; None when unknown."""
    same_step: bool = False
    """Another call of the model response the previous action came from (a parallel
    call): step-counting detectors do not count it again."""
    features: list[float] | None = None
    """The step's generic features (:mod:`~loopwarden.agents.spin.step_features`), when
    the gate is on."""

    @property
    def failed(self) -> bool:
        """The action failed."""
        return self.event.payload.failed

    @property
    def counterpart(self) -> bool:
        """What the person (or the calling agent) said to the agent, not its action."""
        return said_by_counterpart(self.event.payload, self.settings)


def said_by_counterpart(payload: Any, settings: DetectionSettings) -> bool:
    """A counterpart's turn: ``turn: "counterpart"``, or a message turn of one of
    ``detection.counterpart_agents`` (``agent: "user"``, as chat logs name the person)."""
    return payload.turn == "counterpart" or (
        payload.turn == "message" and payload.agent in settings.counterpart_agents
    )


@dataclass(frozen=True, slots=True)
class Finding:
    """What a detector found; the monitor makes it a warning."""

    kind: str
    reason: str
    suggestions: tuple[str, ...]
    event_ids: tuple[str, ...]
    timeline_message: str
    consecutive_count: int | None = None
    edit: dict[str, Any] | None = None
    spin: bool = True
    """A spin pattern: its reason goes into the reflection request (a failure is not)."""
    escalates: bool = False
    """Counts as "spinning" in the seed's reflection-level tree (Layer 1 does)."""
    semantic_check: bool = False
    """Ask the analyst for a Layer 2 semantic check of the recent actions."""
    needs_reflection: bool = False
    """Only shown when the action's reflection level is not None (the seed's failure)."""
    repeated: dict[str, Any] | None = None
    """What repeated (:func:`~loopwarden.agents.spin.what_repeated.repeated`), for the
    warning's ``repeated`` field."""


class Detector(ABC):
    """Per-loop state of one spin pattern."""

    name: ClassVar[str]
    kind: ClassVar[str] = ""
    """The warning kind of its findings (default: the name)."""
    uses_signature: ClassVar[bool] = False
    """Set when :attr:`Observation.signature` is read."""
    uses_features: ClassVar[bool] = False
    """Set when :attr:`Observation.features` is read (the loop keeps a step history)."""

    @abstractmethod
    def observe(self, seen: Observation) -> Finding | None:
        """Record one action; a finding when the pattern is present."""

    def pattern_finding(
        self,
        seen: Observation,
        reason: str,
        suggestions: tuple[str, ...],
        event_ids: Sequence[str],
        count: int,
    ) -> Finding:
        """A finding with the SPIN DETECTED text, for the detectors beyond the seed."""
        action_type = seen.event.payload.action_type
        lang = seen.settings.language
        return Finding(
            kind=self.kind,
            reason=reason,
            suggestions=suggestions,
            event_ids=tuple(event_ids),
            timeline_message=pattern_timeline(lang, action_type, reason, suggestions),
            consecutive_count=count,
        )

    @abstractmethod
    def snapshot(self) -> Any:
        """The state as plain JSON values."""

    @classmethod
    @abstractmethod
    def restore(cls, data: Any) -> Detector:
        """Inverse of :meth:`snapshot`."""


def history_of(histories: dict[str, list[Any]], key: str, most: int) -> list[Any]:
    """``histories[key]`` (new when missing), made the most recently used; beyond ``most``
    keys the least recently used is forgotten. Per-agent state stays bounded."""
    history = histories.pop(key, [])
    histories[key] = history
    while len(histories) > most:
        del histories[next(iter(histories))]
    return history


def restored_histories(data: dict[str, list[Any]]) -> dict[str, list[list[Any]]]:
    """Per-key histories of remembered items read back from loop state (each item a
    list again: JSON and msgpack may give tuples)."""
    return {key: [list(item) for item in items] for key, items in data.items()}


REGISTRY: dict[str, type[Detector]] = {}


def register(cls: type[Detector]) -> type[Detector]:
    """Class decorator: make a detector available by its ``name``."""
    if cls.name in REGISTRY and REGISTRY[cls.name] is not cls:
        raise ValueError(f"two detectors named {cls.name!r}")
    if not cls.kind:
        cls.kind = cls.name
    REGISTRY[cls.name] = cls
    return cls
