"""Loop completions, guardrail overrides, rerun decisions and the loop trace (seed 003).

Completions and overrides travel on the loop-completions topic, keyed by the
loop's *family* (a loop and its reruns: ``loop_001``, ``loop_001_r1``, …), so a
family's state lives on one partition. Decisions go to the decisions topic.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from loopwarden.schemas.events import (
    MAX_INT,
    Envelope,
    JsonObject,
    validate_envelope,
)
from loopwarden.schemas.redaction import redact_fields

Score = Annotated[float, Field(ge=0.0, le=1.0)]


class BiasTag(BaseModel):
    """One bias the reflection (the seed's PESSIMIST) flagged."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    tag: str = Field(min_length=1, max_length=200)
    detail: str | None = None


class CompletionPayload(BaseModel):
    """What a loop's reflection concluded."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    reflection_status: Literal["done"] = Field(
        description="Only completed reflections are processed (seed: must be 'done')."
    )
    alignment_score: Score
    drift_score: Score
    summary_valid: bool = True
    bias_tags: list[BiasTag] = Field(default_factory=list)
    orchestrator_persona: str | None = None
    reflection_persona: str | None = None
    override_fatigue: bool = False
    override_max_reruns: bool = False
    override_by: str | None = None
    max_reruns: int | None = Field(None, ge=0, le=MAX_INT, description="Per-trace rerun limit.")


class LoopCompletion(Envelope):
    """The envelope of a loop completion."""

    type: Literal["loop_complete"] = "loop_complete"
    payload: CompletionPayload


class OverridePayload(BaseModel):
    """An operator's override of a loop family's guardrails (sticky)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    override_fatigue: bool = False
    override_max_reruns: bool = False
    override_by: str = Field(min_length=1, max_length=200)
    override_reason: str | None = None


class GuardrailOverride(Envelope):
    """The envelope of an override."""

    type: Literal["guardrail_override"] = "guardrail_override"
    payload: OverridePayload


class ReflectionCached(Envelope):
    """The analyst's outcome for one loop, cached in the family's state (stage 5)."""

    type: Literal["reflection_cached"] = "reflection_cached"
    payload: JsonObject


AnyGuardrailEvent = LoopCompletion | GuardrailOverride | ReflectionCached
GuardrailEvent = Annotated[AnyGuardrailEvent, Field(discriminator="type")]
_GUARDRAIL_EVENT: TypeAdapter[AnyGuardrailEvent] = TypeAdapter(GuardrailEvent)


def validate_guardrail_event(obj: Any) -> AnyGuardrailEvent:
    """Validate a completion, an override or a cached reflection, with its secrets
    redacted; errors name every field."""
    return redact_guardrail_event(validate_envelope(obj, _GUARDRAIL_EVENT.validate_python))


def redact_guardrail_event(event: AnyGuardrailEvent) -> AnyGuardrailEvent:
    """``event`` with secrets in its free-text fields redacted."""
    if isinstance(event, ReflectionCached):
        return redact_fields(event, ("payload",))
    names: tuple[str, ...] = ("orchestrator_persona", "reflection_persona", "override_by")
    if isinstance(event, GuardrailOverride):
        names = ("override_by", "override_reason")
    payload = redact_fields(event.payload, names)
    if isinstance(payload, CompletionPayload):
        tags = [redact_fields(tag, ("tag", "detail")) for tag in payload.bias_tags]
        if any(new is not old for new, old in zip(tags, payload.bias_tags, strict=True)):
            payload = payload.model_copy(update={"bias_tags": tags})
    return event if payload is event.payload else event.model_copy(update={"payload": payload})


class LoopTrace(BaseModel):
    """The seed's LoopTraceItem: everything the guardrails know about one loop."""

    model_config = ConfigDict(extra="ignore")

    loop_id: str
    status: str
    timestamp: float
    rerun_of: str | None = None
    rerun_depth: int | None = None
    rerun_count: int = 0
    max_reruns: int = 3
    bias_echo: bool = False
    repeated_tags: list[str] | None = None
    reflection_fatigue: float = 0.0
    fatigue_increased: bool = False
    rerun_reason: str | None = None
    rerun_reason_detail: str | None = None
    rerun_trigger: list[str] | None = None
    force_finalize: bool = False
    overridden_by: str | None = None
    orchestrator_persona: str | None = None
    reflection_persona: str | None = None
    alignment_score: float | None = None
    drift_score: float | None = None
    summary_valid: bool | None = None
    decision: str | None = None
