"""Reflection requests (seed 000 section 1.3, stages 1-3, and section 2.2).

For Standard level and above the monitor publishes an ``action_reflection``
request carrying the ActionReflection snapshot; when Layer 1 fires it also
publishes a ``semantic_spin_check`` request with the last N actions and the
seed's analysis prompt. The analyst (a later component) consumes them.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from loopwarden.schemas.events import SCHEMA_VERSION, EditRange, JsonObject, validate_envelope
from loopwarden.schemas.levels import ReflectionLevel
from loopwarden.schemas.provenance import ProducedBy
from loopwarden.schemas.redaction import redact
from loopwarden.schemas.trace_context import TraceContext


class EnvironmentalImpact(BaseModel):
    """Stage 2: what the action changed around it."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    state_changes: list[str] = Field(default_factory=list)
    resource_usage: dict[str, Any] = Field(default_factory=dict)
    side_effects: list[str] = Field(default_factory=list)
    positive_effects: list[str] = Field(default_factory=list)
    negative_effects: list[str] = Field(default_factory=list)


class ActionReflection(BaseModel):
    """Stage 1 snapshot of one action (the seed's ActionReflection)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    event_id: str
    action_type: str
    action_params: JsonObject = Field(default_factory=dict)
    execution_time_ms: float | None = None
    iteration_num: int
    success: bool | None
    error_message: str | None = None
    environmental_impact: EnvironmentalImpact | None = None
    suggestions: list[str] = Field(default_factory=list)
    reflection_level: ReflectionLevel
    reflection_timestamp: float
    is_spinning: bool = False
    spin_reason: str | None = None


class ActionRecord(BaseModel):
    """One action as kept in a loop's window (input to the semantic check)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    event_id: str
    action_type: str
    action_name: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    iteration: int
    success: bool | None = True
    error_message: str | None = None
    occurred_at: float
    edit: EditRange | None = None


class ReflectionRequestKind(StrEnum):
    """What the analyst is asked to do."""

    ACTION_REFLECTION = "action_reflection"
    SEMANTIC_SPIN_CHECK = "semantic_spin_check"
    TASK_COMPLETION = "task_completion"


class ReflectionRequest(BaseModel):
    """A request for reflection analysis, published on the reflection-requests topic."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    request_id: str
    schema_version: int = SCHEMA_VERSION
    type: Literal["reflection_request"] = "reflection_request"
    kind: ReflectionRequestKind
    loop_id: str
    level: ReflectionLevel
    trigger_event_id: str
    reflection: ActionReflection | None = None
    recent_actions: list[ActionRecord] = Field(default_factory=list)
    recent_reflections: list[ActionReflection] = Field(default_factory=list)
    prompt: str | None = Field(None, description="Seed 2.2.2 prompt for the semantic check.")
    memory_query: str | None = Field(None, description="Stage 3 memory search query.")
    memory_budget_bytes: int = Field(0, description="Stage 3 memory budget for this level.")
    occurred_at: float
    produced_by: ProducedBy | None = Field(
        None, description="The component, logic version and settings that produced it."
    )
    trace_context: TraceContext | None = Field(
        None,
        description="W3C trace context of the event that caused it (link your next span).",
    )

    @model_validator(mode="after")
    def _has_reflection(self) -> ReflectionRequest:
        if self.kind is ReflectionRequestKind.ACTION_REFLECTION and self.reflection is None:
            raise ValueError("an action_reflection request needs its reflection")
        return self

    def to_json_dict(self) -> dict[str, Any]:
        """A plain dict ready for :func:`loopwarden.schemas.codec.dumps`."""
        return self.model_dump(mode="json")


def validate_reflection_request(obj: Any) -> dict[str, Any]:
    """Check a decoded reflection request against :class:`ReflectionRequest` and return it
    as a plain dict with its secrets redacted; errors name every wrong field."""
    validate_envelope(obj, ReflectionRequest.model_validate)
    redacted: dict[str, Any] = redact(obj)
    return redacted


class Reflection(BaseModel):
    """The analyst's verdict on a reflection request (the reflections topic)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    reflection_id: str = Field(description="Derived from the loop and the request.")
    schema_version: int = SCHEMA_VERSION
    type: Literal["reflection"] = "reflection"
    request_id: str
    kind: ReflectionRequestKind
    loop_id: str
    level: ReflectionLevel
    trigger_event_id: str
    is_spinning: bool
    reason: str
    suggestions: list[str] = Field(default_factory=list)
    next_actions: list[str] = Field(default_factory=list)
    analysis: Literal["model", "heuristic"] = Field(
        description="Who decided: the model, or the heuristics (no model, or it failed)."
    )
    fallback_reason: str | None = Field(None, description="Why the model was not used.")
    memory_context: str = Field("", description="The memories given to the model, as text.")
    memory_budget_bytes: int = 0
    timeline_message: str
    occurred_at: float
