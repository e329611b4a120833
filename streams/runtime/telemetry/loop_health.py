"""What the live loop-health page shows, kept from the warnings and decisions a worker sends.

Pure and bounded: the last ``recent`` warnings, the loops warned about a spin in
the last ``episode_s`` seconds (a loop in a spin episode), the families whose
completions this worker decided (fatigue, reruns), the families of delegated loops
this worker's fleet role keeps (as trees) and its last fleet warnings, at most
``max_loops`` of each; per loop, its last ``per_loop`` warnings with what the agent was
told (the page's view of one loop).
Only what this worker produced is here: each worker's page shows the loops it owns.
"""

from __future__ import annotations

import time
from collections import Counter, OrderedDict, deque
from dataclasses import dataclass
from typing import Any

NOT_A_SPIN = frozenset({"rerun_limit_reached", "reflection_fatigue", "bias_echo"})


@dataclass(slots=True)
class SpinEpisode:
    """A loop warned about a spin recently."""

    loop_id: str
    kind: str
    level: str
    consecutive_count: int | None
    warnings: int
    first_at: float
    last_at: float
    step: str | None = None
    """The ladder step the loop was last told (warn, escalate, final, stop)."""
    kinds: list[str] | None = None
    """Every kind warned in the episode, first seen first: the detector that started it
    stays in view when another takes over."""


def what_repeated(facts: dict[str, Any] | None) -> str | None:
    """A warning's ``repeated`` facts in one line for the page (None without them)."""
    if not facts:
        return None
    who = f"{facts['agent']}: " if facts.get("agent") else ""
    call = f" `{facts['call']}`" if facts.get("call") else ""
    line = f" → “{facts['line']}”" if facts.get("line") else ""
    return f"{who}{facts['tool']}{call} ×{facts['count']}{line}"


class LoopHealth:
    """Recent warnings, loops in a spin episode, families' fatigue and reruns."""

    def __init__(
        self, recent: int = 50, episode_s: float = 120.0, max_loops: int = 500, per_loop: int = 20
    ) -> None:
        self.episode_s = episode_s
        self.max_loops = max_loops
        self.per_loop = per_loop
        self.recent: deque[dict[str, Any]] = deque(maxlen=recent)
        self.by_loop: OrderedDict[str, deque[dict[str, Any]]] = OrderedDict()
        """Loop id → its last warnings, the loops warned most recently kept."""
        self.kinds: Counter[str] = Counter()
        self.episodes: OrderedDict[str, SpinEpisode] = OrderedDict()
        self.families: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self.fleet_recent: deque[dict[str, Any]] = deque(maxlen=recent)
        self.trees: OrderedDict[str, Any] = OrderedDict()
        """Root loop id → the family's latest state (read when the page asks)."""
        self.tools: Any = None
        """The fleet role's :class:`~loopwarden.agents.fleet.tool_tally.ToolTally`."""
        self.outages: dict[str, dict[str, Any]] = {}
        """Tool → its last outage (from the tool_outage fleet warnings)."""

    def warning(self, warning: dict[str, Any], now: float | None = None) -> None:
        """Note one warning sent."""
        now = time.time() if now is None else now
        kind, loop_id = warning["kind"], warning["loop_id"]
        self.kinds[kind] += 1
        row = {
            "at": now,
            "loop_id": loop_id,
            "kind": kind,
            "level": warning.get("level"),
            "reason": warning.get("reason"),
            "consecutive_count": warning.get("consecutive_count"),
            "step": warning.get("step"),
            "what": what_repeated(warning.get("repeated")),
        }
        self.recent.appendleft(row)
        mine = self.by_loop.pop(loop_id, None) or deque(maxlen=self.per_loop)
        mine.appendleft({**row, "message": warning.get("timeline_message")})
        self.by_loop[loop_id] = mine
        while len(self.by_loop) > self.max_loops:
            self.by_loop.popitem(last=False)
        if kind in NOT_A_SPIN:
            return
        episode = self.episodes.pop(loop_id, None)
        if episode is None or now - episode.last_at > self.episode_s:
            episode = SpinEpisode(loop_id, kind, "", None, 0, now, now)
        episode.kind = kind
        episode.kinds = episode.kinds or []
        if kind not in episode.kinds:
            episode.kinds.append(kind)
        episode.level = warning.get("level") or ""
        episode.consecutive_count = warning.get("consecutive_count")
        episode.step = warning.get("step") or episode.step
        episode.warnings += 1
        episode.last_at = now
        self.episodes[loop_id] = episode
        while len(self.episodes) > self.max_loops:
            self.episodes.popitem(last=False)

    def family(self, result: dict[str, Any]) -> None:
        """Note a guardrail result (the seed's response to a completion)."""
        family = result.get("family_id")
        if not family:
            return
        reflection = result.get("reflection_result") or {}
        decision = result.get("decision_result") or {}
        self.families.pop(family, None)
        self.families[family] = {
            "family_id": family,
            "loop_id": result.get("loop_id"),
            "fatigue": reflection.get("reflection_fatigue"),
            "reruns": decision.get("rerun_count"),
            "max_reruns": decision.get("max_reruns"),
            "decision": decision.get("decision"),
            "finalize_reason": decision.get("finalize_reason"),
        }
        while len(self.families) > self.max_loops:
            self.families.popitem(last=False)

    def fleet(self, warning: dict[str, Any], now: float | None = None) -> None:
        """Note one fleet warning sent."""
        if warning.get("tool"):
            self.outages[str(warning["tool"])] = {
                "since": warning["occurred_at"],
                "error": warning.get("error"),
                "loops": warning.get("count"),
            }
        self.fleet_recent.appendleft(
            {
                "at": time.time() if now is None else now,
                "root_loop_id": warning["root_loop_id"],
                "kind": warning["kind"],
                "step": warning["step"],
                "reason": warning["reason"],
                "agents": warning.get("agents") or [],
                "loops": len(warning.get("loop_ids") or []),
            }
        )

    def family_tree(self, state: Any) -> None:
        """Note a family of several loops (a :class:`~loopwarden.agents.fleet.state.
        FamilyState`, kept by reference and read when the page asks)."""
        self.trees.pop(state.root, None)
        self.trees[state.root] = state
        while len(self.trees) > self.max_loops:
            self.trees.popitem(last=False)

    def _trees(self, now: float) -> list[dict[str, Any]]:
        out = []
        for state in reversed(self.trees.values()):
            out.append(
                {
                    "root_loop_id": state.root,
                    "stopped": state.stopped,
                    "steps": state.steps,
                    "failures": state.failures,
                    "loops": [
                        {
                            "loop_id": loop,
                            "parent": node.parent,
                            "agent": node.agent,
                            "steps": node.steps,
                            "failures": node.failures,
                            "ended": node.ended,
                            "step": node.told,
                            "quiet_s": round(max(0.0, state.updated_at - node.last_seen), 1),
                        }
                        for loop, node in state.loops.items()
                    ],
                }
            )
        return out

    def _tools(self) -> list[dict[str, Any]]:
        rows = self.tools.rows() if self.tools is not None else []
        for row in rows:
            row["outage"] = self.outages.get(row["tool"])
        return rows

    def loop(self, loop_id: str) -> dict[str, Any]:
        """One loop's view: its last warnings, newest first, with what it was told."""
        return {"loop_id": loop_id, "warnings": list(self.by_loop.get(loop_id, ()))}

    def snapshot(self, now: float | None = None) -> dict[str, Any]:
        """The page's data: JSON-ready."""
        now = time.time() if now is None else now
        spinning = [
            {
                "loop_id": e.loop_id,
                "kind": e.kind,
                "kinds": list(e.kinds or [e.kind]),
                "level": e.level,
                "consecutive_count": e.consecutive_count,
                "warnings": e.warnings,
                "step": e.step,
                "since_s": round(now - e.first_at, 1),
                "last_s": round(now - e.last_at, 1),
            }
            for e in reversed(self.episodes.values())
            if now - e.last_at <= self.episode_s
        ]
        return {
            "warnings_by_kind": dict(self.kinds.most_common()),
            "recent_warnings": list(self.recent),
            "spinning_loops": spinning,
            "families": list(reversed(self.families.values())),
            "fleet": {
                "families": self._trees(now),
                "warnings": list(self.fleet_recent),
                "tools": self._tools(),
            },
        }
