"""What every agent does with a record it cannot use: log it and dead-letter it."""

from __future__ import annotations

import logging
from typing import Any

from loopwarden.errors import FieldError
from loopwarden.schemas.dead_letter import DeadLetter, SourcePosition
from loopwarden.streams.sink import RecordSink

log = logging.getLogger(__name__)


def source_of(message: Any) -> SourcePosition:
    """Where a Faust message came from."""
    return SourcePosition(
        message.topic,
        message.partition,
        message.offset,
        int(message.timestamp * 1000) if message.timestamp else None,
    )


def processing_error(exc: BaseException, message: Any, source: SourcePosition) -> DeadLetter:
    """A dead letter for a record whose processing raised (a bug, not bad input)."""
    log.exception(
        "processing failed at %s[%d]@%d",
        source.topic,
        source.partition,
        source.offset,
        exc_info=exc,
    )
    error = FieldError("", f"{type(exc).__name__}: {exc}")
    return DeadLetter(
        "processing_error", str(error), message.value or b"", source, message.key, (error,)
    )


def send_dead_letter(sink: RecordSink, topic: str, letter: DeadLetter) -> None:
    """Log the reason and queue the dead letter (original bytes, reason in headers)."""
    log.warning(
        "dead letter (%s) at %s[%d]@%d: %s",
        letter.reason,
        letter.source.topic,
        letter.source.partition,
        letter.source.offset,
        letter.message,
    )
    sink.add(topic, letter.key, letter.value, headers=letter.headers())
