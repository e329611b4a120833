"""Is a tool down, or is failing what it usually does? Learned from the stream, pure.

The fleet role reads every call. A tool's failures are an outage's only when its
recent failure share is a *change* from its own usual rate: a code search that finds
nothing for a third of its calls, or a booking API that refuses a wrong payment, fails
routinely, and many agents failing it alike within a minute is what it always does.

Per tool, :class:`ToolHealth` keeps

- its last :data:`RECENT_CALLS` calls (failed or not, and which loop made them) **per
  lane**: the partition they were read from. A worker reads its partitions in
  batches, so across partitions the calls it sees are not in event-time order (one
  partition's outage minute beside another's earlier calls); within one they are;
- its **usual rate**: the calls that left that window, counted with a decay of
  ``1 / fleet.outage_baseline_calls`` per call, so the rate follows a tool that
  changes for good (a tool that fails for days is what it is by then).

A failed call may be an outage's (:meth:`ToolHealth.down`) when, in some lane, all of
these hold:

1. the usual rate rests on at least :data:`MIN_BASELINE_CALLS` calls made by at least
   two loops (more than one loop's worth of evidence; a worker that just started, or
   a tool only one agent uses, has no usual rate yet and declares nothing);
2. at least ``fleet.outage_failure_share`` of the recent calls failed, in at least
   two loops;
3. that many failures out of the recent calls would happen with probability at most
   ``fleet.outage_significance`` if each call failed at the usual rate (the upper
   tail of the binomial distribution; the rate is smoothed, (failures + 1) / (calls
   + 2), so no tool's rate is 0 or 1).

A tool that never works has a usual rate near 1 and is never down; a tool that fails
a third of the time is down when nearly all its recent calls fail.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any

RECENT_CALLS = 20
"""Recent calls kept per tool: the sample a change is judged on."""
MIN_SAMPLE = 5
"""Recent calls needed before their failure share says anything."""
MIN_BASELINE_CALLS = 20
"""Calls behind a usual rate before it is trusted."""
MAX_BASELINE_LOOPS = 4
"""Loops remembered per tool's usual rate (two are needed)."""


def binomial_tail(failures: int, calls: int, rate: float) -> float:
    """P(X ≥ ``failures``) for X ~ Binomial(``calls``, ``rate``)."""
    if failures <= 0:
        return 1.0
    return math.fsum(
        math.comb(calls, k) * rate**k * (1.0 - rate) ** (calls - k)
        for k in range(failures, calls + 1)
    )


def _recent() -> deque[tuple[bool, str]]:
    return deque(maxlen=RECENT_CALLS)


@dataclass(slots=True)
class _Tool:
    lanes: dict[int, deque[tuple[bool, str]]] = field(default_factory=dict)
    usual_calls: float = 0.0
    usual_failures: float = 0.0
    usual_loops: set[str] = field(default_factory=set)


class ToolHealth:
    """Every tool's recent calls and usual failure rate, as one worker sees them."""

    def __init__(self, baseline_calls: float = 1000.0, most_tools: int = 10_000) -> None:
        if baseline_calls < 1:
            raise ValueError("baseline_calls must be at least 1")
        self.keep = 1.0 - 1.0 / baseline_calls
        self.most_tools = most_tools
        self._tools: dict[str, _Tool] = {}

    def count(self, tool: str, loop: str, failed: bool, lane: int = 0) -> None:
        """One call of ``tool`` by ``loop``, read from ``lane`` (a partition)."""
        state = self._tools.get(tool)
        if state is None:
            if len(self._tools) >= self.most_tools:
                self._tools.pop(next(iter(self._tools)))  # the oldest tool first
            state = self._tools[tool] = _Tool()
        recent = state.lanes.get(lane)
        if recent is None:
            recent = state.lanes[lane] = _recent()
        if len(recent) == recent.maxlen:
            old_failed, old_loop = recent[0]
            state.usual_calls = state.usual_calls * self.keep + 1.0
            state.usual_failures = state.usual_failures * self.keep + old_failed
            if len(state.usual_loops) < MAX_BASELINE_LOOPS:
                state.usual_loops.add(old_loop)
        recent.append((failed, loop))

    def usual_rate(self, tool: str) -> float | None:
        """The tool's usual failure rate (smoothed); None while it has none."""
        state = self._tools.get(tool)
        if state is None or state.usual_calls < MIN_BASELINE_CALLS or len(state.usual_loops) < 2:
            return None
        return (state.usual_failures + 1.0) / (state.usual_calls + 2.0)

    def down(self, tool: str, share: float, significance: float, lane: int | None = None) -> bool:
        """The tool's recent calls in ``lane`` (any lane when None) fail far more than it
        usually does (module docstring)."""
        rate = self.usual_rate(tool)
        if rate is None:
            return False
        lanes = self._tools[tool].lanes
        if lane is None:
            return any(
                self._lane_down(recent, rate, share, significance) for recent in lanes.values()
            )
        return self._lane_down(lanes.get(lane) or (), rate, share, significance)

    @staticmethod
    def _lane_down(recent: Any, rate: float, share: float, significance: float) -> bool:
        calls = len(recent)
        failing = [loop for failed, loop in recent if failed]
        if calls < MIN_SAMPLE or len(failing) < share * calls or len(set(failing)) < 2:
            return False
        return binomial_tail(len(failing), calls, rate) <= significance
