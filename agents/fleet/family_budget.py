"""Family budget: steps, failures, tokens and cost summed over a family of loops.

Per-run step caps either cut off productive runs or protect nothing when the work
is spread over delegated runs; a team's budget is for the workflow. Each of
``fleet.budget_{steps,failures,tokens,cost}_{warn,stop}`` (off when None) is
reported once when the family's sum reaches it; a stop level stops every live
loop of the family at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loopwarden.agents.fleet import texts
from loopwarden.agents.fleet.detector import (
    FamilyObservation,
    FleetDetector,
    FleetFinding,
    register,
)

MEASURES = ("steps", "failures", "tokens", "cost")


@register
@dataclass(slots=True)
class FamilyBudget(FleetDetector):
    """The budget levels this family has reached."""

    name = "family_budget"
    reached: list[str] = field(default_factory=list)
    """``steps:warn``, ``cost:stop`` …"""

    def observe(self, seen: FamilyObservation) -> FleetFinding | None:
        cfg = seen.settings
        family = seen.family
        found = None
        for what in MEASURES:
            spent = getattr(family, what)
            for level_name in ("stop", "warn"):
                level = getattr(cfg, f"budget_{what}_{level_name}")
                mark = f"{what}:{level_name}"
                if level is None or spent < level or mark in self.reached:
                    continue
                self.reached.append(mark)
                if level_name == "stop":
                    self.reached.append(f"{what}:warn")  # a stop says more than the warning
                stop = level_name == "stop"
                if found is None or (stop and not found.stop):
                    found = FleetFinding(
                        kind=self.name,
                        reason=texts.budget_reason(what, spent, level, stop),
                        suggestions=texts.BUDGET_SUGGESTIONS,
                        event_ids=(seen.event.event_id,),
                        agents=(),
                        count=int(spent),
                        stop=stop,
                    )
                break
        return found

    def snapshot(self) -> Any:
        return self.reached

    @classmethod
    def restore(cls, data: Any) -> FamilyBudget:
        return cls(list(data))
