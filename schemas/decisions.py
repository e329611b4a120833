"""Rerun decisions: the guardrails' answer to each loop completion (the decisions topic).

The record carries the seed's guardrails response (``status``, ``reflection_result``,
``decision_result`` …) and what it answers (``trigger_event_id``), keyed by family.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from loopwarden.schemas.events import SCHEMA_VERSION, JsonObject
from loopwarden.schemas.provenance import ProducedBy


class ReflectionResult(BaseModel):
    """How the completion's reflection went: scores, bias echo, fatigue."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    alignment_score: float | None = None
    drift_score: float | None = None
    summary_valid: bool | None = None
    reflection_persona: str | None = None
    bias_echo: bool = Field(description="The same bias was flagged again and again.")
    repeated_tags: list[str] = Field(default_factory=list)
    repetition_counts: dict[str, int] = Field(default_factory=dict)
    reflection_fatigue: float = Field(description="How tired the family's reruns are (0–1).")
    fatigue_increased: bool
    improvement_detected: bool


class RerunDecision(BaseModel):
    """The guardrails' decision for one loop completion: rerun, or finalize, and why."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    decision_id: str = Field(description="Derived from the family and the completion.")
    schema_version: int = SCHEMA_VERSION
    type: Literal["rerun_decision"] = "rerun_decision"
    trigger_event_id: str = Field(description="The loop completion it answers.")
    occurred_at: float = Field(description="Event time of the completion.")
    produced_by: ProducedBy | None = None
    status: str = Field(description="success (the seed's response status).")
    loop_id: str
    family_id: str = Field(description="The loop and its reruns.")
    reflection_result: ReflectionResult
    decision_result: JsonObject = Field(
        description="The seed's decision: decision (rerun or finalize), rerun_count, "
        "rerun_reason, max_reruns … (see the guardrails API's OpenAPI document)."
    )
    orchestrator_persona: str | None = None
    timestamp: str = Field(description="The completion's time, ISO 8601.")
