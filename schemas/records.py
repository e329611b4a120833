"""One Kafka record's value → validated events and dead letters, for every input topic.

A record holds one event (a JSON object) or a batch (a JSON array of objects).
Each element is validated on its own: a bad element becomes one dead letter
(with its index in the record) and the rest are still delivered. Never raises
for bad input.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from loopwarden.errors import EventDecodeError, EventError, EventTooLargeError, FieldError
from loopwarden.schemas import codec
from loopwarden.schemas.dead_letter import DeadLetter, SourcePosition
from loopwarden.schemas.events import validate_action_or_pass


@dataclass(slots=True)
class DecodedRecord:
    """Valid events of a record with their index in it, plus its dead letters."""

    events: list[tuple[int, Any]] = field(default_factory=list)
    dead_letters: list[DeadLetter] = field(default_factory=list)


def _too_large(size: int, limit: int) -> EventTooLargeError:
    error = FieldError("", f"event is {size} bytes; limits.max_event_bytes is {limit}")
    return EventTooLargeError(str(error), (error,))


def decode_record(
    value: bytes | None,
    key: bytes | None,
    source: SourcePosition,
    max_event_bytes: int,
    validate: Callable[[Any], Any] = validate_action_or_pass,
    *,
    owns_topic: bool = True,
) -> DecodedRecord:
    """Decode and validate one record (with ``validate``; elements it returns None for are
    not this reader's and are passed over); never raises for bad input.

    ``owns_topic=False``: a second reader of another capability's topic (experience on
    the actions topic) — what is wrong with the record itself (empty, not JSON, too
    large) is that capability's dead letter, not a second one; only elements
    ``validate`` claims and refuses are dead-lettered here."""
    out = DecodedRecord()
    if not owns_topic:
        max_event_bytes = 2**62  # sizes are the owner's to check
    if not value:
        if not owns_topic:
            return out
        error: EventError = EventDecodeError(
            "empty record value", (FieldError("", "empty record value"),)
        )
        out.dead_letters.append(DeadLetter.from_error(error, value or b"", source, key))
        return out
    is_batch = value[:1] == b"[" or value.lstrip()[:1] == b"["
    if not is_batch and len(value) > max_event_bytes:
        error = _too_large(len(value), max_event_bytes)
        out.dead_letters.append(DeadLetter.from_error(error, value, source, key))
        return out
    try:
        decoded: Any = codec.loads(value)
    except EventDecodeError as exc:
        if not owns_topic:
            return out
        exc.errors = (FieldError("", str(exc)),)
        out.dead_letters.append(DeadLetter.from_error(exc, value, source, key))
        return out
    if isinstance(decoded, dict):
        _validate_into(out, validate, decoded, value, key, source, None)
    elif isinstance(decoded, list):
        check_sizes = len(value) > max_event_bytes  # else no element can be too large
        for index, element in enumerate(decoded):
            raw = codec.dumps(element) if check_sizes else None
            if raw is not None and len(raw) > max_event_bytes:
                error = _too_large(len(raw), max_event_bytes)
                out.dead_letters.append(DeadLetter.from_error(error, raw, source, key, index))
                continue
            _validate_into(out, validate, element, raw, key, source, index)
    elif owns_topic:
        message = f"expected a JSON object or an array of objects, got {type(decoded).__name__}"
        error = EventDecodeError(message, (FieldError("", message),))
        out.dead_letters.append(DeadLetter.from_error(error, value, source, key))
    return out


def _validate_into(
    out: DecodedRecord,
    validate: Callable[[Any], Any],
    obj: Any,
    raw: bytes | None,
    key: bytes | None,
    source: SourcePosition,
    index: int | None,
) -> None:
    try:
        event = validate(obj)
    except EventError as exc:
        raw = codec.dumps(obj) if raw is None else raw  # the element as it arrived
        out.dead_letters.append(DeadLetter.from_error(exc, raw, source, key, index))
    else:
        if event is not None:
            out.events.append((index or 0, event))
