"""A warn-then-stop ladder instead of a warning on every spinning action.

An *episode* is a run of actions on which some spin detector finds something; it
ends after ``detection.ladder_quiet_actions`` actions without a finding. Within an
episode the agent sees: the first detection (``warn``), the
``ladder_escalate_at``-th (``escalate``: at least Standard, with the Layer 2
semantic check), the ``ladder_final_at``-th (``final``: at least Deep) and the
``ladder_stop_at``-th (``stop``: Critical, ``next_actions: ["stop"]``, once). The
findings in between are counted, not shown (Gemini CLI warns once and halts on the
next detection; Cline warns at 3 and stops at 5).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from loopwarden.schemas.levels import ReflectionLevel
from loopwarden.settings import DetectionSettings

FLOOR = {
    "warn": ReflectionLevel.NONE,
    "escalate": ReflectionLevel.STANDARD,
    "final": ReflectionLevel.DEEP,
    "stop": ReflectionLevel.CRITICAL,
}


def raised(level: ReflectionLevel, step: str) -> ReflectionLevel:
    """``level``, raised to the step's floor."""
    floor = FLOOR[step]
    return level if level.at_least(floor) else floor


@dataclass(slots=True)
class Ladder:
    """Per-loop: findings in the current episode, and actions since the last one."""

    episode: int = 0
    quiet: int = 0

    def step(self, spinning: bool, cfg: DetectionSettings) -> str | None:
        """The ladder step to show for this action, or None."""
        if not spinning:
            self.quiet += 1
            if self.quiet >= cfg.ladder_quiet_actions:
                self.episode = 0
            return None
        self.quiet = 0
        self.episode += 1
        steps = {
            1: "warn",
            cfg.ladder_escalate_at: "escalate",
            cfg.ladder_final_at: "final",
            cfg.ladder_stop_at: "stop",
        }
        return steps.get(self.episode)

    def snapshot(self) -> Any:
        return [self.episode, self.quiet]

    @classmethod
    def restore(cls, data: Any) -> Ladder:
        episode, quiet = data
        return cls(int(episode), int(quiet))
