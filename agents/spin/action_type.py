"""Layer 1: action-type spin (seed 000 section 2.1), O(1) per action.

The seed checks that the last N entries of the action history share one type.
Keeping the length of the current same-type streak answers the same question
without scanning: the last N actions share a type exactly when the streak is
at least N long.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loopwarden.agents.spin import texts
from loopwarden.agents.spin.detector import Detector, Finding, Observation, register
from loopwarden.schemas.warnings import WarningKind


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
        return cls(action_type if isinstance(action_type, str) else None, int(str(count)))


@register
@dataclass(slots=True)
class ActionTypeSpin(Detector):
    """Layer 1 as a detector: a warning on every action while the streak is at least the
    loop's threshold, and a semantic check when it reaches the threshold and every
    ``semantic_check_every`` actions after (default: the threshold)."""

    name = "action_type"
    kind = WarningKind.ACTION_TYPE_SPIN.value
    streak: ActionTypeStreak = field(default_factory=ActionTypeStreak)

    def observe(self, seen: Observation) -> Finding | None:
        if seen.same_step:
            return None  # a parallel call of the step just counted
        payload = seen.event.payload
        action_type = payload.action_type
        by_name = seen.settings.action_type_key == "type_and_name" and payload.action_name
        count = self.streak.observe(
            f"{action_type}\x1f{payload.action_name}" if by_name else action_type
        )
        threshold = seen.threshold
        if not self.streak.is_spinning(threshold):
            return None
        lang = seen.settings.language
        reason = texts.layer1_reason(lang, count, action_type)
        suggestions = texts.LAYER1_SUGGESTIONS[lang]
        every = seen.settings.semantic_check_every or threshold
        return Finding(
            kind=self.kind,
            reason=reason,
            suggestions=suggestions,
            event_ids=tuple(r["event_id"] for r in seen.window[-threshold:]),
            timeline_message=texts.spin_timeline(lang, action_type, reason, suggestions),
            consecutive_count=count,
            escalates=True,
            semantic_check=(count - threshold) % every == 0,
        )

    def snapshot(self) -> Any:
        return self.streak.snapshot()

    @classmethod
    def restore(cls, data: Any) -> ActionTypeSpin:
        return cls(ActionTypeStreak.restore(data))
