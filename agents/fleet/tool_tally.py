"""How each tool fares across the loops this worker's fleet role sees.

:class:`ToolTally` (the loop-health page): event time, in two buckets of
``window_s``, the figures cover the last one to two windows. Tool calls only (message
turns are not tools). Whether a tool is down is
:mod:`~loopwarden.agents.fleet.tool_health`'s question.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MAX_TOOLS = 200
MAX_LOOPS = 1000


@dataclass(slots=True)
class _Bucket:
    calls: dict[str, int] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)
    loops: dict[str, set[str]] = field(default_factory=dict)
    failing: dict[str, set[str]] = field(default_factory=dict)


class ToolTally:
    """Calls, failures and the loops calling and failing, per tool, recently."""

    def __init__(self, window_s: float = 300.0) -> None:
        self.window_s = window_s
        self._start = 0.0
        self._now = _Bucket()
        self._before = _Bucket()

    def count(self, tool: str, loop: str, failed: bool, at: float) -> None:
        """One call of ``tool`` by ``loop`` at event time ``at``."""
        if at - self._start >= self.window_s:
            rotate = at - self._start < 2 * self.window_s
            self._before = self._now if rotate else _Bucket()
            self._now, self._start = _Bucket(), at
        bucket = self._now
        if tool not in bucket.calls and len(bucket.calls) >= MAX_TOOLS:
            return
        bucket.calls[tool] = bucket.calls.get(tool, 0) + 1
        loops = bucket.loops.setdefault(tool, set())
        if len(loops) < MAX_LOOPS:
            loops.add(loop)
        if failed:
            bucket.failures[tool] = bucket.failures.get(tool, 0) + 1
            failing = bucket.failing.setdefault(tool, set())
            if len(failing) < MAX_LOOPS:
                failing.add(loop)

    def rows(self, most: int = 20) -> list[dict[str, Any]]:
        """The tools, the highest failure rate first."""
        out: list[dict[str, Any]] = []
        for tool in set(self._now.calls) | set(self._before.calls):
            calls = self._now.calls.get(tool, 0) + self._before.calls.get(tool, 0)
            failures = self._now.failures.get(tool, 0) + self._before.failures.get(tool, 0)
            loops = self._now.loops.get(tool, set()) | self._before.loops.get(tool, set())
            failing = self._now.failing.get(tool, set()) | self._before.failing.get(tool, set())
            out.append(
                {
                    "tool": tool,
                    "calls": calls,
                    "failures": failures,
                    "failure_rate": round(failures / calls, 3) if calls else 0.0,
                    "loops": len(loops),
                    "loops_failing": len(failing),
                }
            )
        out.sort(key=lambda row: (-row["failure_rate"], -row["calls"], row["tool"]))
        return out[:most]
