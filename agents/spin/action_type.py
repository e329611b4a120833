"""Layer 1: action-type spin (seed 000 section 2.1), O(1) per action.

The seed checks that the last N entries of the action history share one type.
Keeping the length of the current same-type streak answers the same question
without scanning: the last N actions share a type exactly when the streak is
at least N long.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class ActionTypeStreak:
    """The current run of consecutive actions of one type."""

    action_type: str | None = None
    count: int = 0

    def observe(self, action_type: str) -> int:
        """Record one action and return the streak length including it."""
        if action_type == self.action_type:
            self.count += 1
        else:
            self.action_type = action_type
            self.count = 1
        return self.count

    def is_spinning(self, threshold: int) -> bool:
        """True when the last ``threshold`` actions all had the current type."""
        return self.count >= max(threshold, 1)

    def snapshot(self) -> list[object]:
        """State as plain JSON values."""
        return [self.action_type, self.count]

    @classmethod
    def restore(cls, data: list[object]) -> ActionTypeStreak:
        """Inverse of :meth:`snapshot`."""
        action_type, count = data
        return cls(action_type if isinstance(action_type, str) else None, int(count))  # type: ignore[arg-type]
