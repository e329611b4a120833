"""Action events: the versioned envelope agents publish, and its validation.

An event on the actions topic is a JSON object::

    {"event_id": "…", "schema_version": 1, "type": "action", "loop_id": "…",
     "occurred_at": 1767225600.25, "published_at": 1767225600.26,
     "payload": {"action_type": "shell", "params": {"cmd": "ls"}, "success": true}}

A record may also carry a JSON array of such objects (the publisher batches the
events that share a partition). Timestamps are epoch seconds or ISO-8601 strings.
New fields are added with defaults; unknown fields are ignored so that older
workers keep reading newer events.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    WithJsonSchema,
    model_validator,
)

from loopwarden.errors import EventValidationError, FieldError
from loopwarden.schemas.levels import ReflectionLevel
from loopwarden.schemas.redaction import redact_fields
from loopwarden.schemas.text_limits import (
    RESULT_MAX_CHARS,
    TEXT_LIMITS,
    cut_long_text,
    result_digest,
)
from loopwarden.schemas.trace_context import TraceContext

SCHEMA_VERSION = 1
T = TypeVar("T")

MAX_JSON_DEPTH = 32
"""Free-form values (``params``, ``resource_usage``) nest at most this deep."""
MAX_INT = 2**63 - 1
"""Integers are signed 64-bit, as Kafka's other clients and orjson read them."""
MAX_TIMESTAMP = 253_402_300_799.0
"""9999-12-31T23:59:59Z."""


def to_epoch_seconds(value: Any) -> Any:
    """Epoch seconds of an ISO-8601 string (with a timezone) or a datetime; anything
    else as it is (the validator checks it). A number that can only be milliseconds
    (JavaScript's ``Date.now()``, Java's ``currentTimeMillis``) is refused with a
    message that says so: read as seconds it would be thousands of years ahead."""
    if (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and MAX_TIMESTAMP < value <= MAX_TIMESTAMP * 1000
    ):
        raise ValueError(
            f"{value} looks like milliseconds since the epoch; timestamps are epoch "
            "seconds (JavaScript: Date.now() / 1000) or ISO-8601 strings with a zone"
        )
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError as exc:
            raise ValueError("expected epoch seconds or an ISO-8601 timestamp") from exc
        if parsed.tzinfo is None:
            raise ValueError("ISO-8601 timestamp needs a timezone (e.g. Z or +00:00)")
        return parsed.timestamp()
    if isinstance(value, datetime):
        return value.timestamp()
    return value


TIMESTAMP_JSON_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "number", "minimum": 0, "maximum": MAX_TIMESTAMP},
        {"type": "string", "format": "date-time"},
    ],
    "description": "Epoch seconds (not milliseconds), or an ISO-8601 timestamp with a zone.",
}
"""What a producer may send for a timestamp, as JSON Schema (the validator's own would
name only the number it converts to, with pydantic's ``ge``/``le`` keys)."""

Timestamp = Annotated[
    float,
    BeforeValidator(to_epoch_seconds),
    Field(ge=0, le=MAX_TIMESTAMP, allow_inf_nan=False),
    WithJsonSchema(TIMESTAMP_JSON_SCHEMA),
]
"""Epoch seconds; ISO-8601 strings with a timezone are accepted and converted."""


def _check_json(value: Any, depth: int = 0) -> None:
    if depth > MAX_JSON_DEPTH:
        raise ValueError(f"nested deeper than {MAX_JSON_DEPTH} levels")
    if isinstance(value, dict):
        for item in value.values():
            _check_json(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _check_json(item, depth + 1)
    elif isinstance(value, int) and not -MAX_INT - 1 <= value <= MAX_INT:
        raise ValueError("integer outside the signed 64-bit range")
    elif isinstance(value, float) and value != value:
        raise ValueError("NaN is not a JSON number")


def _bounded_json(value: Any) -> Any:
    _check_json(value)
    return value


JsonObject = Annotated[dict[str, Any], AfterValidator(_bounded_json)]
"""A free-form JSON object, at most :data:`MAX_JSON_DEPTH` deep, 64-bit integers."""
Count = Annotated[int, Field(ge=1, le=MAX_INT)]
_PRINTABLE = r"^[^\x00-\x1f\x7f]+$"
EventId = Annotated[str, Field(min_length=1, max_length=200, pattern=_PRINTABLE)]
"""An event id: 1–200 characters, no control characters."""
LoopId = Annotated[str, Field(min_length=1, max_length=256, pattern=_PRINTABLE)]
"""A loop id (the record key): 1–256 characters, no control characters."""


class Envelope(BaseModel):
    """What every input event carries around its ``type`` and ``payload``: identity,
    loop, time and the publisher's trace context. Each input (actions, completions,
    overrides, cached reflections, task starts and ends) is this plus its own two."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    event_id: EventId
    schema_version: int = Field(SCHEMA_VERSION, ge=1, le=SCHEMA_VERSION)
    loop_id: LoopId
    occurred_at: Timestamp
    published_at: Timestamp | None = None
    trace_context: TraceContext | None = Field(
        None, description="W3C trace context of the publisher's span (traceparent, tracestate)."
    )


ENVELOPE_FIELDS = frozenset({*Envelope.model_fields, "type", "payload"})
"""Every key of an input event outside its payload."""


class EditRange(BaseModel):
    """A code edit's line range (Layer 3 input): inclusive 1-based lines."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    start_line: int = Field(ge=1, le=MAX_INT)
    end_line: int = Field(ge=1, le=MAX_INT)
    content: str | None = None
    file: str | None = Field(
        None, max_length=1000, description="The edited file: another file is another region."
    )

    @model_validator(mode="after")
    def _ordered(self) -> EditRange:
        if self.end_line < self.start_line:
            raise ValueError("end_line must be >= start_line")
        return self

    @property
    def line_count(self) -> int:
        """Lines the edit spans, as the seed counts them (end - start + 1)."""
        return self.end_line - self.start_line + 1


class ReadRange(BaseModel):
    """The file region a call read: inclusive 1-based lines, or the whole file when
    they are not given. A read of another file is not made stale by an edit, and the
    same region read again with nothing done is a re-read."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    file: str = Field(min_length=1, max_length=1000)
    start_line: int | None = Field(None, ge=1, le=MAX_INT)
    end_line: int | None = Field(None, ge=1, le=MAX_INT)

    @model_validator(mode="after")
    def _ordered(self) -> ReadRange:
        if self.end_line is not None and self.start_line is None:
            raise ValueError("end_line needs start_line")
        if self.end_line is not None and self.start_line and self.end_line < self.start_line:
            raise ValueError("end_line must be >= start_line")
        return self


class ActionPayload(BaseModel):
    """What the agent did in one step of its loop."""

    model_config = ConfigDict(frozen=True, extra="ignore", allow_inf_nan=False)

    action_type: str = Field(min_length=1, max_length=TEXT_LIMITS["action_type"])
    action_name: str | None = Field(None, max_length=TEXT_LIMITS["action_name"])
    params: JsonObject = Field(default_factory=dict)
    iteration: Count | None = Field(None, description="Defaults to the loop's count.")
    success: bool | None = Field(True, description="None: unknown (never counted as a failure).")
    error_message: str | None = None
    terminated: bool = Field(False, description="The action ended the loop.")
    duration_ms: float | None = Field(None, ge=0)
    edit: EditRange | None = Field(None, description="Set for code edits (Layer 3).")
    read: ReadRange | None = Field(
        None, description="Set for file reads: the file and lines the call read."
    )
    tool_call_id: str | None = Field(
        None, max_length=TEXT_LIMITS["tool_call_id"], description="The model's call id."
    )
    response_id: str | None = Field(
        None,
        max_length=TEXT_LIMITS["response_id"],
        description="The model response that made the call: parallel calls of one response "
        "are one step.",
    )
    agent: str | None = Field(
        None,
        max_length=TEXT_LIMITS["agent"],
        description="The agent that acted, in a multi-agent system: repetition is judged "
        "per agent.",
    )
    parent_loop_id: LoopId | None = Field(
        None,
        description="The loop that delegated to this one (a sub-agent's run): loops linked "
        "so form a family that the fleet role watches as one.",
    )
    root_loop_id: LoopId | None = Field(
        None,
        description="The loop at the top of the family (default: parent_loop_id, so set it "
        "when delegations nest deeper than one level; the client does).",
    )
    task: str | None = Field(
        None,
        max_length=RESULT_MAX_CHARS,
        description="The task this loop was given (a delegated loop: what its parent asked); "
        "the first event that carries it counts.",
    )
    turn: Literal["tool_call", "message", "counterpart"] | None = Field(
        None,
        description="message: an agent turn without a tool call; counterpart: what the "
        "person (or the calling agent) said to this agent, text in result (default: a tool "
        "call).",
    )
    rejected: bool | None = Field(
        None,
        description="The tool or harness refused this call before it had any effect (a "
        "validation error, a 4xx, an edit refused by a linter, a reply in the wrong "
        "format); implies success=false.",
    )
    result: str | None = Field(
        None,
        max_length=RESULT_MAX_CHARS,
        description="What the action returned (a message turn: its text), short.",
    )
    result_digest: str | None = Field(
        None,
        min_length=1,
        max_length=128,
        description="A digest of the whole result: equal results, equal digests.",
    )
    reflection_level: ReflectionLevel | None = Field(
        None, description="Action/operator-defined level; overrides the decision tree."
    )
    reflection_enabled: bool | None = Field(None, description="Per-loop switch, kept by the loop.")
    simple: bool = Field(False, description="A simple action gets Minimal reflection.")
    spin_threshold: Count | None = Field(None, description="Per-loop Layer 1 threshold.")
    resource_usage: JsonObject = Field(default_factory=dict)
    side_effects: list[str] = Field(default_factory=list)
    truncated: list[str] | None = Field(
        None,
        max_length=len(TEXT_LIMITS),
        description="The text fields cut at their limit where the event was received "
        "(the first part is kept; a cut result keeps the digest of the whole); absent "
        "when nothing was cut.",
    )

    @model_validator(mode="before")
    @classmethod
    def _cut_long_text(cls, data: Any) -> Any:
        return cut_long_text(data)

    def root(self, loop_id: str) -> str:
        """The id of the family's top loop: ``root_loop_id``, else ``parent_loop_id``,
        else ``loop_id`` itself (a loop nobody delegated to is its own family's root)."""
        return self.root_loop_id or self.parent_loop_id or loop_id

    @model_validator(mode="before")
    @classmethod
    def _rejected_failed(cls, data: Any) -> Any:
        """A rejected call failed: ``success`` defaults to false, and true is refused."""
        if isinstance(data, dict) and data.get("rejected") is True:
            if data.get("success") is True:
                raise ValueError("a rejected call did not succeed: leave success out or false")
            if data.get("success") is not False:
                data = {**data, "success": False}
        return data

    @property
    def failed(self) -> bool:
        """The action failed (an unknown outcome is not a failure)."""
        return self.success is False

    @property
    def counterpart(self) -> bool:
        """What the person (or the calling agent) said to this agent, not its action."""
        return self.turn == "counterpart"


class ActionEvent(Envelope):
    """One action: the envelope and what the agent did."""

    type: Literal["action"] = "action"
    payload: ActionPayload

    @property
    def result_key(self) -> str | None:
        """``payload.result_digest``, else a digest of ``payload.result`` with whitespace
        runs collapsed; None when the result is unknown."""
        payload = self.payload
        if payload.result_digest is not None:
            return payload.result_digest
        return None if payload.result is None else result_digest(payload.result)

    def redacted(self) -> ActionEvent:
        """This event with secrets in its free-text and free-form fields redacted."""
        payload = redact_fields(
            self.payload,
            (
                "action_name",
                "params",
                "error_message",
                "result",
                "task",
                "resource_usage",
                "side_effects",
            ),
        )
        if payload.edit is not None:
            edit = redact_fields(payload.edit, ("content",))
            if edit is not payload.edit:
                payload = payload.model_copy(update={"edit": edit})
        return self if payload is self.payload else self.model_copy(update={"payload": payload})


def _path(loc: tuple[int | str, ...]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        else:
            parts.append(f".{item}" if parts else item)
    return "".join(parts)


def field_errors(exc: ValidationError) -> tuple[FieldError, ...]:
    """Turn pydantic's errors into ``FieldError(path, message)`` pairs."""
    return tuple(FieldError(_path(err["loc"]), err["msg"]) for err in exc.errors())


def envelope(
    payload: dict[str, Any],
    *,
    loop_id: str | None = None,
    kind: str | None = None,
    event_id: str | None = None,
    occurred_at: float | None = None,
    published_at: float | None = None,
) -> dict[str, Any]:
    """The one envelope every client-made event travels in (validated by its type's
    ``validate_*``): a new event id and the current time unless given."""
    from loopwarden.schemas.ids import new_event_id

    now = time.time()
    data: dict[str, Any] = {"event_id": event_id or new_event_id()}
    if kind is not None:
        data["type"] = kind
    if loop_id is not None:
        data["loop_id"] = loop_id
    data["occurred_at"] = now if occurred_at is None else occurred_at
    if published_at is not None:
        data["published_at"] = published_at
    data["payload"] = payload
    return data


def validate_envelope(obj: Any, validate: Callable[[Any], T]) -> T:
    """Run ``validate`` (a pydantic validator) on a decoded JSON object.

    Raises :class:`EventValidationError` whose message lists every wrong field as
    ``path: what was wrong``; a newer schema version than this worker reads is
    refused by name.
    """
    if not isinstance(obj, dict):
        raise EventValidationError(
            f"expected a JSON object, got {type(obj).__name__}",
            (FieldError("", "expected a JSON object"),),
        )
    version = obj.get("schema_version", SCHEMA_VERSION)
    if isinstance(version, int) and version > SCHEMA_VERSION:
        error = FieldError(
            "schema_version",
            f"unsupported version {version}; this worker reads <= {SCHEMA_VERSION}",
        )
        raise EventValidationError(str(error), (error,))
    try:
        return validate(obj)
    except ValidationError as exc:
        errors = field_errors(exc)
        raise EventValidationError("; ".join(str(e) for e in errors), errors) from None


def validate_action(obj: Any) -> ActionEvent:
    """Validate one decoded JSON value as an action event (see :func:`validate_envelope`),
    with its secrets redacted: nothing downstream ever sees them."""
    return validate_envelope(obj, ActionEvent.model_validate).redacted()


TASK_EVENT_TYPES = frozenset({"task_start", "task_end"})
"""Events of the actions topic that are not actions: a task's start and end (see
:mod:`loopwarden.schemas.tasks`), read by the experience agent."""


def validate_action_or_pass(obj: Any) -> ActionEvent | None:
    """:func:`validate_action`, or None for a task event (it is not the monitor's)."""
    if isinstance(obj, dict) and obj.get("type") in TASK_EVENT_TYPES:
        return None
    return validate_action(obj)
