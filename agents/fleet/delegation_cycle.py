"""Delegation cycle: the same agent given the same task again and again in one family.

Sub-agents that delegate to each other in a circle (A → B → A → B, or
A → B → C → A) each start with a fresh step budget and a fresh repeat tracker,
so no per-run guard ever fires. Here every loop of the family is a node
(its ``agent``, the digest of its ``task`` with volatile tokens masked); the
``fleet.cycle_repeats``-th loop on the same node, the root included, is a
cycle. Loops whose task is not known are not compared (an orchestrator that
hands many different tasks to one worker is not a cycle).
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

MAX_NODES = 256
"""(agent, task) nodes remembered per family."""


@register
@dataclass(slots=True)
class DelegationCycle(FleetDetector):
    """Per (agent, task digest): the loops that were given it, in order."""

    name = "delegation_cycle"
    nodes: dict[str, list[str]] = field(default_factory=dict)
    """node key → [loop id, first event id] pairs, flattened, oldest first."""

    def observe(self, seen: FamilyObservation) -> FleetFinding | None:
        node = seen.node
        if not seen.task_known or node.task is None:
            return None
        key = f"{node.agent}\x1f{node.task}"
        entries = self.nodes.pop(key, [])
        self.nodes[key] = entries  # the most recently used last
        while len(self.nodes) > MAX_NODES:
            del self.nodes[next(iter(self.nodes))]
        entries.extend((seen.loop_id, seen.event.event_id))
        count = len(entries) // 2
        if count < seen.settings.cycle_repeats:
            return None
        path = _path(seen, entries[0])
        return FleetFinding(
            kind=self.name,
            reason=texts.cycle_reason(node.agent, count, path),
            suggestions=texts.CYCLE_SUGGESTIONS,
            event_ids=tuple(entries[1::2][-seen.settings.cycle_repeats :]),
            agents=tuple(dict.fromkeys(path)),
            count=count,
        )

    def snapshot(self) -> Any:
        return self.nodes

    @classmethod
    def restore(cls, data: Any) -> DelegationCycle:
        return cls(dict(data))


def _path(seen: FamilyObservation, first_loop: str) -> list[str]:
    """The agents from the first loop on this node down to this one (parent links; a
    link not known yet, its loop's events still on their way, ends the path)."""
    loops = seen.family.loops
    path: list[str] = []
    loop: str | None = seen.loop_id
    while loop is not None and loop in loops and len(path) < 64:
        if loops[loop].steps:  # a loop named only by its child: its agent is not known yet
            path.append(loops[loop].agent)
        if loop == first_loop:
            break
        loop = loops[loop].parent
    return path[::-1]
