"""The gate in the monitor: which of the rules' proposals an agent is shown, pure.

:class:`Gating` holds the loaded gate model (:mod:`loopwarden.agents.spin.gate`) and
its threshold (``detection.gate_threshold``, else the model's own) and decides, per
step, on the findings the rules proposed: a polling call keeps only the rule that
counts polls itself; the rest are scored and shown when a trusted rule proposed or
the score reaches the threshold. Findings of a rule the model does not know are never
the gate's to stop.
"""

from __future__ import annotations

from loopwarden.agents.spin import gate as gates
from loopwarden.agents.spin.detector import Finding, Observation
from loopwarden.agents.spin.progress import polls, tool_rule
from loopwarden.schemas.events import ActionEvent
from loopwarden.schemas.outputs import JsonObject
from loopwarden.settings import DetectionSettings

POLL_AWARE = frozenset({"repeated_outcome"})
"""Rules that count a polling call's repeats themselves (``detection.poll_repeats``)."""


class Gating:
    """The gate's decision on each step's proposals."""

    def __init__(self, settings: DetectionSettings) -> None:
        self.settings = settings
        self.gate = gates.load(settings.gate_model)
        self.threshold = (
            settings.gate_threshold if settings.gate_threshold is not None else self.gate.threshold
        )
        self.tap: list[tuple[str, list[float]]] | None = None
        """When a list: every step the gate scores, as (event id, model input) (training)."""

    def decide(
        self, seen: Observation, found: list[Finding]
    ) -> tuple[list[Finding], JsonObject | None]:
        """The findings shown, and the gate's record of the decision (None when it was
        not asked: nothing it knows was proposed)."""
        if polls_or_exempt(seen.event, self.settings):
            found = [f for f in found if not f.spin or f.kind in POLL_AWARE]
        gate = self.gate
        proposed = [f.kind for f in found if f.spin and f.kind in gate.proposers]
        if seen.features is None or not proposed:
            return found, None
        x = gate.vector(seen.features, proposed)
        if self.tap is not None:
            self.tap.append((seen.event.event_id, x))
        score = gate.score(x)
        if not (gate.trusted_proposed(x) or score >= self.threshold):
            known = gate.proposers
            found = [f for f in found if not (f.spin and f.kind in known)]
        return found, gate.explain(x, score, self.threshold)


def polls_or_exempt(event: ActionEvent, cfg: DetectionSettings) -> bool:
    """A call that polls (``detection.tools`` says so, or it waits before it looks) or
    that the user exempted."""
    rule = tool_rule(event.payload, cfg.tools)
    return rule == "exempt" or polls(event.payload, rule)
