"""A running task's state: what it is, the advice it got, and its capped step log."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loopwarden.agents.experience.steps import Step
from loopwarden.schemas import codec


@dataclass
class OpenTask:
    """A task between its start and its end (kept in the experience agent's table)."""

    loop_id: str
    event_id: str
    spec: dict[str, Any]
    started_at: float
    last_seen: float
    partition: int = 0
    strategy: str = "reflexion_explore"
    advised_ids: list[str] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    recorded: int = 0
    seen_events: list[str] = field(default_factory=list)

    @property
    def truncated(self) -> bool:
        """More steps were recorded than kept (the oldest were dropped)."""
        return self.recorded > len(self.steps)

    def add_step(self, event_id: str, step: Step, at: float, max_steps: int) -> bool:
        """Record a step (False for an event already recorded: a redelivery)."""
        if event_id in self.seen_events:
            return False
        self.seen_events.append(event_id)
        del self.seen_events[:-max_steps]
        self.steps.append(step)
        del self.steps[:-max_steps]
        self.recorded += 1
        self.last_seen = max(self.last_seen, at)
        return True

    def snapshot(self) -> bytes:
        """The state as table bytes."""
        return codec.dumps(self.__dict__)

    @classmethod
    def restore(cls, data: bytes) -> OpenTask:
        """The state from :meth:`snapshot` bytes."""
        return cls(**codec.loads(data))
