"""The seed's failure warning: every failed action gets a Critical reflection and an
``action_failed`` warning with the CRITICAL REFLECTION text (seed 000 §1.3), shown
when reflection is on for the loop."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from loopwarden.agents.spin import texts
from loopwarden.agents.spin.detector import Detector, Finding, Observation, register
from loopwarden.schemas.warnings import WarningKind


@register
@dataclass(slots=True)
class ActionFailed(Detector):
    """Stateless: a finding for each failed action."""

    name = "action_failed"
    kind = WarningKind.ACTION_FAILED.value

    def observe(self, seen: Observation) -> Finding | None:
        payload = seen.event.payload
        if not payload.failed:
            return None
        suggestions = texts.failure_suggestions(
            seen.settings.language, payload.action_type, payload.error_message
        )
        return Finding(
            kind=self.kind,
            reason=payload.error_message or f"action '{payload.action_type}' failed",
            suggestions=suggestions,
            event_ids=(seen.event.event_id,),
            timeline_message=texts.critical_timeline(
                payload.action_type, payload.error_message, suggestions
            ),
            spin=False,
            needs_reflection=True,
        )

    def snapshot(self) -> Any:
        return None

    @classmethod
    def restore(cls, data: Any) -> ActionFailed:
        return cls()
