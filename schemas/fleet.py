"""Fleet warnings: what the fleet role says about a whole family of loops.

Each loop of the family also gets its own :class:`~loopwarden.schemas.warnings.LoopWarning`
(same ``kind``, its ``step``) on the warnings topic; the fleet warning is the one
record per finding, keyed by the family's root loop id, that operators and
dashboards read (``loopwarden tail --fleet``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from loopwarden.schemas.events import SCHEMA_VERSION
from loopwarden.schemas.provenance import ProducedBy

FLEET_KINDS = frozenset({"delegation_cycle", "ping_pong", "family_budget", "tool_outage"})
"""The kinds of fleet findings (a fleet warning's, and each loop told of one)."""


class FamilyTotals(BaseModel):
    """What the family had spent when the finding was made."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    loops: int
    steps: int
    failures: int
    tokens: int = 0
    cost: float = 0.0


class FleetWarning(BaseModel):
    """One finding about a family: who loops, what the family was told."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    warning_id: str = Field(description="Derived from kind, root loop and triggering event.")
    schema_version: int = SCHEMA_VERSION
    type: Literal["fleet_warning"] = "fleet_warning"
    kind: str = Field(description="One of FLEET_KINDS.")
    root_loop_id: str = Field(
        description="The family's root loop (the record key); a tool outage: tool\\x1f<tool>."
    )
    tool: str | None = Field(None, description="A tool outage: the failing tool.")
    error: str | None = Field(None, description="A tool outage: the error's first line.")
    trigger_loop_id: str
    trigger_event_id: str
    step: Literal["warn", "escalate", "stop"]
    reason: str
    suggestions: list[str] = Field(default_factory=list)
    agents: list[str] = Field(default_factory=list, description="The agents involved.")
    loop_ids: list[str] = Field(description="The live loops told (each got a LoopWarning).")
    event_ids: list[str] = Field(description="The events behind the finding, oldest first.")
    count: int = Field(description="Repeats (cycle, ping-pong) or the amount spent (budget).")
    totals: FamilyTotals
    occurred_at: float = Field(description="Event time of the triggering event.")
    produced_by: ProducedBy | None = None

    def to_json_dict(self) -> dict[str, Any]:
        """A plain dict ready for :func:`loopwarden.schemas.codec.dumps`."""
        return self.model_dump(mode="json")


class ToolOutageNotice(BaseModel):
    """A tool failing with one error for many loops (the tool-outages topic, keyed by
    tool): every monitor stops counting that failure against its agents while it lasts."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    schema_version: int = SCHEMA_VERSION
    type: Literal["tool_outage"] = "tool_outage"
    tool: str = Field(description="The failing tool (action type).")
    error_digest: str = Field(
        description="Digest of the whole error, volatile tokens masked (what a failure must match)."
    )
    error: str = Field(description="The error's first line.")
    since: float = Field(description="Event time of its first failure.")
    until: float = Field(
        description="Event time it is known to last until (a later notice extends it)."
    )
    loops: int = Field(description="How many runs it failed for so far.")
