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

from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from loopwarden.errors import EventValidationError, FieldError
from loopwarden.schemas.levels import ReflectionLevel

SCHEMA_VERSION = 1
T = TypeVar("T")


def _to_epoch_seconds(value: Any) -> Any:
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


Timestamp = Annotated[float, BeforeValidator(_to_epoch_seconds), Field(ge=0)]
"""Epoch seconds; ISO-8601 strings with a timezone are accepted and converted."""


class EditRange(BaseModel):
    """A code edit's line range (Layer 3 input): inclusive 1-based lines."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    start_line: int = Field(ge=1)
    end_line: int = Field(ge=1)
    content: str | None = None

    @model_validator(mode="after")
    def _ordered(self) -> EditRange:
        if self.end_line < self.start_line:
            raise ValueError("end_line must be >= start_line")
        return self

    @property
    def line_count(self) -> int:
        """Lines the edit spans, as the seed counts them (end - start + 1)."""
        return self.end_line - self.start_line + 1


class ActionPayload(BaseModel):
    """What the agent did in one step of its loop."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    action_type: str = Field(min_length=1, max_length=200)
    action_name: str | None = Field(None, max_length=500)
    params: dict[str, Any] = Field(default_factory=dict)
    iteration: int | None = Field(None, ge=1, description="Defaults to the loop's count.")
    success: bool = True
    error_message: str | None = None
    terminated: bool = Field(False, description="The action ended the loop.")
    duration_ms: float | None = Field(None, ge=0)
    edit: EditRange | None = Field(None, description="Set for code edits (Layer 3).")
    reflection_level: ReflectionLevel | None = Field(
        None, description="Action/operator-defined level; overrides the decision tree."
    )
    reflection_enabled: bool | None = Field(None, description="Per-loop switch, kept by the loop.")
    simple: bool = Field(False, description="A simple action gets Minimal reflection.")
    spin_threshold: int | None = Field(None, ge=1, description="Per-loop Layer 1 threshold.")
    resource_usage: dict[str, Any] = Field(default_factory=dict)
    side_effects: list[str] = Field(default_factory=list)


class ActionEvent(BaseModel):
    """The envelope of one action: identity, loop, time, payload."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    event_id: str = Field(min_length=1, max_length=200)
    schema_version: int = Field(SCHEMA_VERSION, ge=1, le=SCHEMA_VERSION)
    type: Literal["action"] = "action"
    loop_id: str = Field(min_length=1, max_length=256)
    occurred_at: Timestamp
    published_at: Timestamp | None = None
    payload: ActionPayload


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
    """Validate one decoded JSON value as an action event (see :func:`validate_envelope`)."""
    return validate_envelope(obj, ActionEvent.model_validate)
