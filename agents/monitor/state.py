"""Per-loop state, bounded, with a compact snapshot for the Faust table.

Everything a loop needs between events lives here: the window of recent
actions, the iteration count, the Layer 1 streak, the Layer 3 edit counter,
the last reflections, per-loop overrides, and the origin of the last applied
event per source partition (so a record reprocessed after a restart is not
applied twice, whatever partition a producer put it on).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loopwarden.agents.spin.action_type import ActionTypeStreak
from loopwarden.agents.spin.code_edit import CodeEditSpinDetector
from loopwarden.schemas import codec
from loopwarden.schemas.positions import AppliedPositions, Origin

SNAPSHOT_VERSION = 2


@dataclass(slots=True)
class LoopState:
    """Mutable state of one loop. Restore, apply events, snapshot."""

    loop_id: str
    partition: int = -1
    seq: int = 0
    iteration: int = 0
    window: list[dict[str, Any]] = field(default_factory=list)
    streak: ActionTypeStreak = field(default_factory=ActionTypeStreak)
    edits: CodeEditSpinDetector = field(default_factory=CodeEditSpinDetector)
    spin_threshold: int | None = None
    reflection_enabled: bool | None = None
    reflections: list[dict[str, Any]] = field(default_factory=list)
    applied: AppliedPositions = field(default_factory=AppliedPositions)
    first_seen: float = 0.0
    last_seen: float = 0.0

    def already_applied(self, origin: Origin) -> bool:
        """True when the event at ``origin`` was applied before (a replay)."""
        return self.applied.applied(origin)

    def mark_applied(self, origin: Origin) -> None:
        """Remember the origin of the event just applied."""
        self.applied.mark(origin)

    def has_event(self, event_id: str) -> bool:
        """True when ``event_id`` is among the actions in the window (a re-publish)."""
        return event_id in [record["event_id"] for record in self.window]

    def snapshot(self) -> bytes:
        """Encode the state for the table (orjson)."""
        return codec.dumps(
            {
                "v": SNAPSHOT_VERSION,
                "p": self.partition,
                "seq": self.seq,
                "it": self.iteration,
                "w": self.window,
                "st": self.streak.snapshot(),
                "ed": self.edits.snapshot(),
                "thr": self.spin_threshold,
                "ren": self.reflection_enabled,
                "rf": self.reflections,
                "off": self.applied.snapshot(),
                "ts": [self.first_seen, self.last_seen],
            }
        )

    @classmethod
    def restore(cls, loop_id: str, data: bytes) -> LoopState:
        """Decode a snapshot written by :meth:`snapshot`."""
        raw = codec.loads(data)
        version = raw.get("v")
        if version not in (1, SNAPSHOT_VERSION):
            raise ValueError(f"unknown loop state snapshot version {version!r}")
        applied = AppliedPositions.from_state_snapshot(raw)
        first_seen, last_seen = raw["ts"]
        return cls(
            loop_id=loop_id,
            partition=raw["p"],
            seq=raw["seq"],
            iteration=raw["it"],
            window=raw["w"],
            streak=ActionTypeStreak.restore(raw["st"]),
            edits=CodeEditSpinDetector.restore(raw["ed"]),
            spin_threshold=raw["thr"],
            reflection_enabled=raw["ren"],
            reflections=raw["rf"],
            applied=applied,
            first_seen=first_seen,
            last_seen=last_seen,
        )

    @staticmethod
    def peek_expiry(data: bytes) -> tuple[int, float]:
        """(partition, last_seen) of a snapshot, for the idle-loop sweep."""
        raw = codec.loads(data)
        return raw["p"], raw["ts"][1]
