"""A family's state: its loops as a tree, its sums, its ladder, its detectors' memory.

A family is a root loop and every loop that names it (``root_loop_id``, else
``parent_loop_id``). Its state lives on the root's partition (the fleet role
re-routes delegated loops' events there) and is a plain snapshot in the
``fleet-family`` table, as a loop's is in ``loop-state``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from loopwarden.agents.spin.normalise import normalised
from loopwarden.schemas import codec
from loopwarden.schemas.positions import AppliedPositions

SNAPSHOT_VERSION = 1
RECENT_EVENT_IDS = 256
"""Event ids remembered per family: the same id published again is not counted twice."""


@dataclass(slots=True)
class LoopNode:
    """One loop of the family, as the fleet sees it."""

    parent: str | None
    agent: str
    first_seen: float
    last_seen: float
    task: str | None = None
    """The digest of the task it was given (None: not known yet)."""
    steps: int = 0
    failures: int = 0
    last_action: str = ""
    ended: bool = False
    told: str | None = None
    """The last family ladder step this loop was told (``warn`` … ``stop``)."""

    def live(self, now: float, ttl_s: float) -> bool:
        """Not ended, and an event within ``ttl_s`` of ``now`` (event time)."""
        return not self.ended and now - self.last_seen <= ttl_s

    def snapshot(self) -> list[Any]:
        return [
            self.parent,
            self.agent,
            self.first_seen,
            self.last_seen,
            self.task,
            self.steps,
            self.failures,
            self.last_action,
            self.ended,
            self.told,
        ]

    @classmethod
    def restore(cls, data: list[Any]) -> LoopNode:
        return cls(*data)


@dataclass(slots=True)
class FamilyState:
    """Everything the fleet role keeps about one family."""

    root: str
    partition: int = 0
    loops: dict[str, LoopNode] = field(default_factory=dict)
    steps: int = 0
    failures: int = 0
    tokens: int = 0
    cost: float = 0.0
    findings: int = 0
    """Findings so far: the family ladder's position."""
    stopped: bool = False
    stop: list[str] | None = None
    """[kind, reason] of the finding that stopped the family."""
    detectors: dict[str, Any] = field(default_factory=dict)
    """Each fleet detector by name: the live object once used, else its snapshot."""
    recent_ids: list[str] = field(default_factory=list)
    applied: AppliedPositions = field(default_factory=AppliedPositions)
    updated_at: float = 0.0

    def seen_before(self, event_id: str) -> bool:
        """True when ``event_id`` was applied already; else remember it."""
        if event_id in self.recent_ids:
            return True
        self.recent_ids.append(event_id)
        if len(self.recent_ids) > RECENT_EVENT_IDS:
            del self.recent_ids[0]
        return False

    def live_loops(self, now: float, ttl_s: float) -> list[str]:
        """The family's live loops, in the order they joined."""
        return [loop for loop, node in self.loops.items() if node.live(now, ttl_s)]

    def forget_beyond(self, most: int) -> None:
        """Keep at most ``most`` loops: ended ones go first, then the quietest."""
        while len(self.loops) > most:
            ended = [loop for loop, node in self.loops.items() if node.ended and loop != self.root]
            candidates = ended or [loop for loop in self.loops if loop != self.root]
            quietest = min(candidates, key=lambda loop: self.loops[loop].last_seen)
            del self.loops[quietest]

    def snapshot(self) -> bytes:
        """Encode for the table."""
        return codec.dumps_state(
            {
                "v": SNAPSHOT_VERSION,
                "p": self.partition,
                "l": {loop: node.snapshot() for loop, node in self.loops.items()},
                "s": self.steps,
                "f": self.failures,
                "t": self.tokens,
                "c": self.cost,
                "n": self.findings,
                "x": self.stopped,
                "xs": self.stop,
                "d": {
                    name: d.snapshot() if hasattr(d, "snapshot") else d
                    for name, d in self.detectors.items()
                },
                "r": self.recent_ids,
                "off": self.applied.snapshot(),
                "ts": self.updated_at,
            }
        )

    @classmethod
    def restore(cls, root: str, data: bytes) -> FamilyState:
        """Inverse of :meth:`snapshot`."""
        raw = codec.loads_state(data)
        if raw.get("v") != SNAPSHOT_VERSION:
            raise ValueError(f"unknown fleet family snapshot version {raw.get('v')!r}")
        return cls(
            root=root,
            partition=raw["p"],
            loops={loop: LoopNode.restore(node) for loop, node in raw["l"].items()},
            steps=raw["s"],
            failures=raw["f"],
            tokens=raw["t"],
            cost=raw["c"],
            findings=raw["n"],
            stopped=raw["x"],
            stop=raw["xs"],
            detectors=raw["d"],
            recent_ids=raw["r"],
            applied=AppliedPositions.restore(raw["off"]),
            updated_at=raw["ts"],
        )


def task_digest(task: str) -> str:
    """The digest of a task as given: lower-cased, volatile tokens (ids, times, numbers)
    masked, whitespace collapsed — the same request worded with another id is the same."""
    return hashlib.sha1(normalised(task).encode(), usedforsecurity=False).hexdigest()[:16]
