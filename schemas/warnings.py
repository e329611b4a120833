"""Warnings: what loopwarden pushes back to a running agent."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from loopwarden.schemas.events import SCHEMA_VERSION, EditRange
from loopwarden.schemas.levels import ReflectionLevel
from loopwarden.schemas.provenance import ProducedBy
from loopwarden.schemas.trace_context import TraceContext


class WarningKind(StrEnum):
    """Which detector produced a warning."""

    ACTION_TYPE_SPIN = "action_type_spin"
    """Layer 1: the last N actions share one action type."""
    CODE_EDIT_SPIN = "code_edit_spin"
    """Layer 3: small edits keep landing on the same few lines."""
    ACTION_FAILED = "action_failed"
    """An action failed: Critical reflection, no silent failures."""
    LOGIC_SPIN = "logic_spin"
    """Layer 2: the analyst found the agent repeating the same logic."""
    BIAS_ECHO = "bias_echo"
    """Guardrail: the same bias was flagged again and again; the loop halts."""
    RERUN_LIMIT_REACHED = "rerun_limit_reached"
    """Guardrail: the family used its reruns; the loop is finalized."""
    REFLECTION_FATIGUE = "reflection_fatigue"
    """Guardrail: reruns stopped improving; the loop is finalized."""


class Repeated(BaseModel):
    """What repeated, as facts: the warning's text is written from them, and the page
    shows them."""

    model_config = ConfigDict(frozen=True)

    how: Literal["same_result", "same_failure", "very_same_call", "refused", "said"] = Field(
        description="same_result / same_failure: a call and its outcome again; "
        "very_same_call: the call again, no result published; refused: the tool refused "
        "it for the same reason; said: a message said again."
    )
    tool: str = Field(description="The action type (tool) that repeated.")
    call: str | None = Field(
        None, description="The part of its arguments that identifies it (redacted, short)."
    )
    line: str | None = Field(
        None,
        description="The line that repeats: a failure's reason (an exception, FAILED or "
        "E line, an error message), a result's telling line, the message said.",
    )
    count: int = Field(description="How many times.")
    since: int = Field(description="The action it started at.")
    agent: str | None = Field(None, description="Who repeated it (the event's agent).")


class GateDecision(BaseModel):
    """What the calibrated gate saw when it let a rule's finding through."""

    model_config = ConfigDict(frozen=True)

    score: float = Field(
        ge=0.0, le=1.0, description="Calibrated probability that the step is in a loop."
    )
    threshold: float = Field(ge=0.0, le=1.0, description="The score a finding needed.")
    model: str = Field(description="The gate model's id (its training run).")
    trusted: bool = Field(
        False, description="Shown because a trusted rule proposed it, whatever the score."
    )
    features: dict[str, float] = Field(
        description="The features that moved the score most: their signed contributions "
        "to the log-odds."
    )


class LoopWarning(BaseModel):
    """A warning for one loop, with a ready-made ``timeline_message`` to inject."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    warning_id: str = Field(description="Derived from kind, loop and triggering event.")
    schema_version: int = SCHEMA_VERSION
    type: Literal["warning"] = "warning"
    kind: WarningKind | str = Field(
        union_mode="left_to_right",
        description="Which detector: a WarningKind, or the kind of a registered detector.",
    )
    loop_id: str
    level: ReflectionLevel = Field(description="Reflection level decided for the trigger.")
    reason: str
    suggestions: list[str] = Field(default_factory=list)
    next_actions: list[str] = Field(default_factory=list)
    event_ids: list[str] = Field(description="The events that caused the warning, oldest first.")
    trigger_event_id: str
    action_type: str
    iteration: int
    consecutive_count: int | None = None
    edit: EditRange | None = None
    timeline_message: str
    occurred_at: float = Field(description="Event time of the triggering event.")
    step: Literal["warn", "escalate", "final", "stop"] | None = Field(
        None,
        description="The ladder step (default profile): stop means end the run; None: no ladder.",
    )
    produced_by: ProducedBy | None = Field(
        None, description="The component, logic version and settings that produced it."
    )
    repeated: Repeated | None = Field(
        None, description="What repeated, for the repetition detectors' warnings."
    )
    gate: GateDecision | None = Field(
        None, description="The gate's decision (gated profile): in the record, not the text."
    )
    trace_context: TraceContext | None = Field(
        None,
        description="W3C trace context of the event that caused it (link your next span).",
    )

    def to_json_dict(self) -> dict[str, Any]:
        """A plain dict ready for :func:`loopwarden.schemas.codec.dumps`."""
        return self.model_dump(mode="json")
