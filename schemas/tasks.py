"""Task lifecycle events and experience advice (seed 004).

A task's start and end travel on the actions topic, keyed by loop id like the
loop's actions, so the worker sees them in order with the steps between them::

    {"event_id": "…", "type": "task_start", "loop_id": "order-42", "occurred_at": …,
     "payload": {"task_description": "search iPhone 15 on Taobao and order it",
                 "intent": "shopping", "app_name": "taobao", "app_version": "10.2"}}
    {"event_id": "…", "type": "task_end", "loop_id": "order-42", "occurred_at": …,
     "payload": {"success": true}}

The action monitor passes over them; the experience agent answers a start with
advice on the advice topic and learns from a successful exploration at its end.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from loopwarden.schemas.events import SCHEMA_VERSION, Envelope, JsonObject, validate_envelope
from loopwarden.schemas.redaction import redact_fields
from loopwarden.schemas.trace_context import TraceContext

Strategy = Literal["direct_replay", "adaptive_replay", "guided_exploration", "reflexion_explore"]
"""The seed's four routes (§3.3, §4.2), from most to least reuse."""
Score = Annotated[float, Field(ge=0.0, le=1.0)]


class TaskSpec(BaseModel):
    """What the agent is about to do (seed 004 §3.1 task metadata and context)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    task_description: str = Field(min_length=1, max_length=4000)
    intent: str | None = Field(None, max_length=200, description="e.g. shopping, social.")
    app_name: str | None = Field(None, max_length=200)
    app_version: str | None = Field(None, max_length=100)
    device_info: JsonObject = Field(default_factory=dict)
    tags: list[Annotated[str, Field(max_length=200)]] = Field(default_factory=list, max_length=50)


class TaskStart(Envelope):
    """A task starts in a loop: the worker answers with advice."""

    type: Literal["task_start"] = "task_start"
    payload: TaskSpec


class TaskEndPayload(BaseModel):
    """How the task ended."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    success: bool
    feedback_score: Score | None = Field(None, description="The user's rating (§3.1).")
    reason: str | None = Field(None, max_length=2000, description="Why it failed, if known.")


class TaskEnd(Envelope):
    """A task ended: a successful exploration is learned; a replay's outcome updates the
    success rate of the experience it followed."""

    type: Literal["task_end"] = "task_end"
    payload: TaskEndPayload


TaskEvent = TaskStart | TaskEnd
_TASK_EVENT: TypeAdapter[TaskEvent] = TypeAdapter(Annotated[TaskEvent, Field(discriminator="type")])


def validate_task_event(obj: Any) -> TaskEvent:
    """Validate a task start or end, with secrets in its free text redacted (§7)."""
    event = validate_envelope(obj, _TASK_EVENT.validate_python)
    fields = ("reason",) if isinstance(event, TaskEnd) else ("task_description", "device_info")
    payload = redact_fields(event.payload, fields)
    return event if payload is event.payload else event.model_copy(update={"payload": payload})


class AdvisedStep(BaseModel):
    """One step of an advised path (slots filled where the task gave their values)."""

    model_config = ConfigDict(extra="ignore")

    action_type: str
    target: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    key_point: str | None = Field(None, description="navigation, input or confirmation.")
    open_slots: list[str] = Field(
        default_factory=list, description="Slots whose values the task did not give."
    )


class Advice(BaseModel):
    """The experience agent's answer to a task start."""

    model_config = ConfigDict(extra="ignore")

    schema_version: int = SCHEMA_VERSION
    type: Literal["advice"] = "advice"
    advice_id: str
    task_event_id: str
    loop_id: str
    strategy: Strategy
    confidence: float
    experimental: bool = Field(False, description="The experience is from another app version.")
    experience_ids: list[str] = Field(default_factory=list)
    pattern_id: str | None = None
    steps: list[AdvisedStep] = Field(default_factory=list)
    pattern: str | None = None
    slots: dict[str, str] = Field(default_factory=dict)
    avoid: list[str] = Field(default_factory=list, description="What failed before.")
    reexplore: bool = Field(False, description="The known path fails too often: explore.")
    scores: dict[str, float] = Field(default_factory=dict, description="What the match rests on.")
    timeline_message: str
    produced_at: float
    read_versions: dict[str, int | None] | None = Field(
        None,
        description="The experience tables' LanceDB versions the match read (exact, semantic, "
        "patterns): an audit replays the advice against the store as it was then.",
    )
    trace_context: TraceContext | None = None
