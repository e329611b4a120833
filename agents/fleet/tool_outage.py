"""Tool outage: one tool failing with one error for many loops at once.

A hundred agents retrying a tool that is down for everyone are each told "try a
different action" by their own loop's failure detectors; the problem is not
theirs. The fleet role routes every failed call to the owner of its tool (the
fleet re-route topic, keyed ``tool\\x1f<action_type>``) — when, on the worker that
reads it, the tool fails far more than it usually does
(:mod:`~loopwarden.agents.fleet.tool_health`: a tool that never works, or that fails
routinely for agents' own reasons, is not down) — where a
:class:`ToolOutages` per tool keeps the failures of the last
``fleet.outage_window_s`` (event time). ``fleet.outage_loops`` distinct loops
failing with the same error (all of it, volatile tokens masked) is
an outage:

- one fleet warning (kind ``tool_outage``) on the fleet-warnings topic;
- each affected loop, and each loop that fails the same way while it lasts, is told
  once: the tool is failing for everyone, wait or use another;
- an outage notice on the tool-outages topic, which every monitor follows
  (:mod:`~loopwarden.agents.fleet.outage_board`): a failure it covers is not counted
  against the agent.

The outage is over when its error has not been seen for ``fleet.outage_quiet_s``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from loopwarden.agents import findings as findings_builder
from loopwarden.agents.spin.normalise import normalised
from loopwarden.schemas import codec
from loopwarden.schemas.events import ActionEvent
from loopwarden.schemas.levels import ReflectionLevel
from loopwarden.schemas.outputs import (
    FleetWarningRecord,
    JsonObject,
    ToolOutageRecord,
    WarningRecord,
)
from loopwarden.schemas.positions import AppliedPositions
from loopwarden.settings import FleetSettings

TOOL_KEY_PREFIX = "tool\x1f"
MAX_FAILURES = 512
"""Failures remembered per tool (within the window)."""
MAX_TOLD = 2048
"""Loops remembered as told, per outage."""


def tool_key(tool: str) -> str:
    """The routing key (and state key) of a tool's outage state."""
    return TOOL_KEY_PREFIX + tool


ERROR_CHARS = 2000


def error_digest(error: str | None) -> str:
    """The digest of a whole error (up to 2,000 characters), lower-cased, volatile
    tokens masked: a service's 503 with another request id is the same error; an
    agent's own traceback or failing test run, which names its files, tests and
    values after a common header, is not another agent's."""
    text = (error or "").strip()[:ERROR_CHARS]
    return hashlib.sha1(normalised(text).encode(), usedforsecurity=False).hexdigest()[:16]


@dataclass(slots=True)
class Outage:
    """One outage of a tool: one error failing for many loops."""

    since: float
    """Event time of its first failure within the window."""
    last_seen: float
    """Event time of its latest failure."""
    error: str
    """The error's first line (shown)."""
    told: list[str]
    """The loops told about it (the newest :data:`MAX_TOLD`)."""

    def stored(self) -> list[Any]:
        """As kept in the tool's snapshot: ``[since, last seen, error, loops told]``."""
        return [self.since, self.last_seen, self.error, self.told]

    @classmethod
    def from_stored(cls, raw: list[Any]) -> Outage:
        since, last_seen, error, told = raw
        return cls(since, last_seen, error, told)


@dataclass(slots=True)
class ToolOutages:
    """One tool's recent failures and its outages, by error digest."""

    tool: str
    partition: int = 0
    failures: list[list[Any]] = field(default_factory=list)
    """[error digest, loop id, event time], oldest first, within the window."""
    outages: dict[str, Outage] = field(default_factory=dict)
    """error digest → its outage."""
    updated_at: float = 0.0
    applied: AppliedPositions = field(default_factory=AppliedPositions)

    def observe(
        self, event: ActionEvent, cfg: FleetSettings, stamp: JsonObject | None
    ) -> tuple[list[WarningRecord], list[FleetWarningRecord], list[ToolOutageRecord]]:
        """Apply one failed call: (per-loop warnings, fleet warnings, outage notices)."""
        at = event.occurred_at
        whole = event.payload.error_message
        error = (whole or "").strip().split("\n", 1)[0][:300]  # shown
        digest = error_digest(whole)  # as the monitors' board digests it
        self.updated_at = max(self.updated_at, at)
        outage = self.outages.get(digest)
        if outage is not None and at - outage.last_seen > cfg.outage_quiet_s:
            del self.outages[digest]  # over: a new one may start
            outage = None
        warnings: list[WarningRecord] = []
        if outage is not None:
            outage.last_seen = max(outage.last_seen, at)
            if event.loop_id not in outage.told:
                outage.told = [*outage.told, event.loop_id][-MAX_TOLD:]
                warnings.append(self._tell(event.loop_id, event, outage, cfg, stamp))
            return warnings, [], [self._notice(digest, outage, cfg)]
        self.failures.append([digest, event.loop_id, at])
        self.failures = [f for f in self.failures if at - f[2] <= cfg.outage_window_s]
        del self.failures[:-MAX_FAILURES]
        loops = list(dict.fromkeys(f[1] for f in self.failures if f[0] == digest))
        if len(loops) < cfg.outage_loops:
            return [], [], []
        outage = Outage(min(f[2] for f in self.failures if f[0] == digest), at, error, loops)
        self.outages[digest] = outage
        self.failures = [f for f in self.failures if f[0] != digest]
        warnings = [self._tell(loop, event, outage, cfg, stamp) for loop in loops]
        return (
            warnings,
            [self._fleet_warning(event, outage, cfg, stamp)],
            [self._notice(digest, outage, cfg)],
        )

    def _reason(self, outage: Outage, cfg: FleetSettings) -> str:
        error = outage.error or "an error"
        return (
            f"the tool {self.tool!r} is failing for everyone: {len(outage.told)} runs got the "
            f"same error within {cfg.outage_window_s:g} s ({error})"
        )

    def _tell(
        self, loop: str, event: ActionEvent, outage: Outage, cfg: FleetSettings, stamp: Any
    ) -> WarningRecord:
        reason = self._reason(outage, cfg)
        suggestions = (
            f"Wait and try {self.tool!r} again later, or use another tool.",
            "This failure is not counted against this run.",
        )
        return findings_builder.warning(
            kind="tool_outage",
            loop_id=loop,
            trigger_event_id=event.event_id,
            level=ReflectionLevel.STANDARD.value,
            reason=reason,
            event_ids=(event.event_id,),
            action_type=self.tool,
            iteration=0,
            timeline_message=f"TOOL OUTAGE: {reason}.\nSuggestions: " + " ".join(suggestions),
            occurred_at=event.occurred_at,
            stamp=stamp,
            suggestions=suggestions,
            next_actions=("wait", "use_another_tool"),
            consecutive_count=len(outage.told),
        )

    def _fleet_warning(
        self, event: ActionEvent, outage: Outage, cfg: FleetSettings, stamp: Any
    ) -> FleetWarningRecord:
        return findings_builder.fleet_warning(
            kind="tool_outage",
            root_loop_id=tool_key(self.tool),
            tool=self.tool,
            error=outage.error,
            trigger_loop_id=event.loop_id,
            trigger_event_id=event.event_id,
            step="warn",
            reason=self._reason(outage, cfg),
            suggestions=["Fix or fail over the tool; the agents were told to wait."],
            agents=[],
            loop_ids=outage.told,
            event_ids=[event.event_id],
            count=len(outage.told),
            loops=len(outage.told),
            steps=0,
            failures=len(outage.told),
            occurred_at=event.occurred_at,
            stamp=stamp,
        )

    def _notice(self, digest: str, outage: Outage, cfg: FleetSettings) -> ToolOutageRecord:
        return findings_builder.outage_notice(
            tool=self.tool,
            error_digest=digest,
            error=outage.error,
            since=outage.since,
            until=outage.last_seen + cfg.outage_quiet_s,
            loops=len(outage.told),
        )

    def snapshot(self) -> bytes:
        return codec.dumps_state(
            {
                "v": 1,
                "p": self.partition,
                "f": self.failures,
                "o": {digest: outage.stored() for digest, outage in self.outages.items()},
                "off": self.applied.snapshot(),
                "ts": self.updated_at,
            }
        )

    @classmethod
    def restore(cls, tool: str, data: bytes) -> ToolOutages:
        raw = codec.loads_state(data)
        applied = AppliedPositions.restore(raw["off"])
        outages = {digest: Outage.from_stored(stored) for digest, stored in raw["o"].items()}
        return cls(tool, raw["p"], raw["f"], outages, raw["ts"], applied)
