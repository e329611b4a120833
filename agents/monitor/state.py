"""Per-loop state, bounded, with a compact snapshot for the Faust table.

Everything a loop needs between events lives here: the window of recent
actions, the iteration count, each detector's own state (by its name), the
last reflections, per-loop overrides, and the origin of the last applied event
per source partition (so a record reprocessed after a restart is not applied
twice, whatever partition a producer put it on).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from loopwarden.agents.spin.detector import REGISTRY, Detector
from loopwarden.agents.spin.ladder import Ladder
from loopwarden.agents.spin.step_features import StepHistory
from loopwarden.schemas import codec
from loopwarden.schemas.positions import AppliedPositions, Origin

SNAPSHOT_VERSION = 3
LESSONS_KEPT = 8
"""Distinct failures a loop remembers having learnt (a loop cycling through more than
this many learns the oldest again)."""
_EVENT_ID = itemgetter("event_id")
_V2_DETECTORS = {"st": "action_type", "ed": "code_edit"}


@dataclass(slots=True)
class LoopState:
    """Mutable state of one loop. Restore, apply events, snapshot."""

    loop_id: str
    partition: int = -1
    seq: int = 0
    iteration: int = 0
    window: list[dict[str, Any]] = field(default_factory=list)
    detectors: dict[str, Detector] = field(default_factory=dict)
    ladder: Ladder = field(default_factory=Ladder)
    response_id: str | None = None
    spin_threshold: int | None = None
    reflection_enabled: bool | None = None
    reflections: list[dict[str, Any]] = field(default_factory=list)
    applied: AppliedPositions = field(default_factory=AppliedPositions)
    first_seen: float = 0.0
    last_seen: float = 0.0
    duplicates: int = 0
    """Events skipped because their id was already applied in this loop (from another
    position: a re-published id, not a replay)."""
    outage_failures: int = 0
    """Failures covered by a tool outage (the fleet role's): not counted against the agent."""
    history: StepHistory | None = None
    """The recent steps as keys, for the gate's features (None when the gate is off)."""
    learnt: list[str] = field(default_factory=list)
    """Keys of the last failures made lessons (:func:`~loopwarden.agents.monitor.
    lessons.lesson_key`), at most :data:`LESSONS_KEPT`."""

    def learns(self, key: str) -> bool:
        """True when the failure ``key`` is a new lesson for this loop (it is remembered);
        False when the loop learnt it already."""
        if key in self.learnt:
            return False
        self.learnt.append(key)
        del self.learnt[:-LESSONS_KEPT]
        return True

    def step_history(self) -> StepHistory:
        """The loop's step history (created on first use)."""
        if self.history is None:
            self.history = StepHistory()
        return self.history

    def already_applied(self, origin: Origin) -> bool:
        """True when the event at ``origin`` was applied before (a replay)."""
        return self.applied.applied(origin)

    def mark_applied(self, origin: Origin) -> None:
        """Remember the origin of the event just applied."""
        self.applied.mark(origin)

    def detector(self, name: str) -> Detector:
        """The loop's state of the detector ``name`` (created on first use)."""
        found = self.detectors.get(name)
        if found is None:
            found = self.detectors[name] = REGISTRY[name]()
        return found

    def has_event(self, event_id: str) -> bool:
        """True when ``event_id`` is among the actions in the window (a re-publish)."""
        return event_id in map(_EVENT_ID, self.window)

    def snapshot(self) -> bytes:
        """Encode the state for the table (compressed JSON, an exact-size copy: it stays
        in memory); :meth:`restore` reads it."""
        return codec.dumps_state(
            {
                "v": SNAPSHOT_VERSION,
                "p": self.partition,
                "seq": self.seq,
                "it": self.iteration,
                "w": self.window,
                "det": {name: d.snapshot() for name, d in self.detectors.items()},
                "lad": self.ladder.snapshot(),
                "rid": self.response_id,
                "thr": self.spin_threshold,
                "ren": self.reflection_enabled,
                "rf": self.reflections,
                "off": self.applied.snapshot(),
                "ts": [self.first_seen, self.last_seen],
                "dup": self.duplicates,
                "out": self.outage_failures,
                **({"sh": self.history.snapshot()} if self.history is not None else {}),
                **({"ln": self.learnt} if self.learnt else {}),
            }
        )

    @classmethod
    def restore(cls, loop_id: str, data: bytes) -> LoopState:
        """Decode a snapshot written by :meth:`snapshot`."""
        raw = codec.loads_state(data)
        version = raw.get("v")
        if version not in (1, 2, SNAPSHOT_VERSION):
            raise ValueError(f"unknown loop state snapshot version {version!r}")
        applied = AppliedPositions.from_state_snapshot(raw)
        first_seen, last_seen = raw["ts"]
        return cls(
            loop_id=loop_id,
            partition=raw["p"],
            seq=raw["seq"],
            iteration=raw["it"],
            window=raw["w"],
            detectors=_restore_detectors(raw),
            ladder=Ladder.restore(raw["lad"]) if "lad" in raw else Ladder(),
            response_id=raw.get("rid"),
            spin_threshold=raw["thr"],
            reflection_enabled=raw["ren"],
            reflections=raw["rf"],
            applied=applied,
            first_seen=first_seen,
            last_seen=last_seen,
            duplicates=raw.get("dup", 0),
            outage_failures=raw.get("out", 0),
            history=StepHistory.restore(raw["sh"]) if "sh" in raw else None,
            learnt=raw.get("ln", []),
        )

    @staticmethod
    def peek_expiry(data: bytes) -> tuple[int, float]:
        """(partition, last_seen) of a snapshot, for the idle-loop sweep."""
        raw = codec.loads_state(data)
        return raw["p"], raw["ts"][1]


def _restore_detectors(raw: dict[str, Any]) -> dict[str, Detector]:
    """Detector states by name; v1/v2 snapshots kept Layer 1 and 3 under fixed keys.
    A detector no longer registered is dropped (its loop starts it afresh)."""
    saved = raw.get("det")
    if saved is None:
        saved = {name: raw[key] for key, name in _V2_DETECTORS.items() if key in raw}
    return {name: REGISTRY[name].restore(data) for name, data in saved.items() if name in REGISTRY}
