"""What every agent does with a record it cannot use: dead-letter it, and say so (rate-limited).

The dead-letter topic is a copy of the input for re-processing: a dead letter's
value is the original bytes, secrets included, unless ``limits.redact_dead_letters``
is set (then a JSON value is redacted structurally and anything else as text).
Its reason, field paths and source position travel in ``lw.dlq.*`` headers, and
those are always redacted.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING

from loopwarden.errors import EventDecodeError, FieldError
from loopwarden.schemas import codec
from loopwarden.schemas.dead_letter import DeadLetter, SourcePosition
from loopwarden.schemas.redaction import redact, redact_text
from loopwarden.streams.runtime.record_queue import RecordQueue

if TYPE_CHECKING:
    from loopwarden.streams.runtime.records import Record

log = logging.getLogger(__name__)


class RateLimitedLog:
    """Logs the first ``burst`` lines of a kind per ``window_s``, then counts the rest."""

    def __init__(self, logger: logging.Logger, burst: int = 10, window_s: float = 60.0) -> None:
        self.logger = logger
        self.burst = burst
        self.window_s = window_s
        self._window: dict[str, tuple[float, int]] = {}

    def allow(self, kind: str, now: float | None = None) -> bool:
        """True when a line of ``kind`` may be logged now."""
        now = time.monotonic() if now is None else now
        start, count = self._window.get(kind, (now, 0))
        if now - start >= self.window_s:
            if count > self.burst:
                self.logger.warning(
                    "%d more %s line(s) suppressed in the last %.0f s",
                    count - self.burst,
                    kind,
                    now - start,
                )
            start, count = now, 0
        self._window[kind] = (start, count + 1)
        return count < self.burst


def redacted_value(value: bytes) -> bytes:
    """``value`` with its secrets redacted (JSON structurally, anything else as text)."""
    try:
        return codec.dumps(redact(codec.loads(value)))
    except (EventDecodeError, TypeError):
        return redact_text(value.decode("utf-8", "replace")).encode()


class DeadLetters:
    """Sends dead letters to one topic through the sink, logging each reason sparingly."""

    def __init__(
        self, sink: RecordQueue, topic: str, *, redact_values: bool = False, burst: int = 10
    ) -> None:
        self.sink = sink
        self.topic = topic
        self.redact_values = redact_values
        self.limiter = RateLimitedLog(log, burst=burst)
        self.sent = 0
        self.on_sent: Callable[[str], None] | None = None
        """Called with each dead letter's reason (the worker's metrics)."""

    def send(self, letter: DeadLetter) -> None:
        """Queue ``letter`` (original bytes, reason in headers) and log it if not flooded."""
        message = redact_text(letter.message)
        if self.limiter.allow(f"dead letter ({letter.reason})"):
            log.warning("dead letter (%s) at %s: %s", letter.reason, _where(letter.source), message)
        if message != letter.message or self.redact_values:
            value = redacted_value(letter.value) if self.redact_values else letter.value
            letter = DeadLetter(
                letter.reason,
                message,
                value,
                letter.source,
                letter.key,
                letter.errors,
                letter.batch_index,
                letter.extra,
            )
        self.sink.add(self.topic, letter.key, letter.value, headers=letter.headers())
        self.sent += 1
        if self.on_sent is not None:
            self.on_sent(letter.reason)

    def processing_error(self, exc: BaseException, record: Record, retried: int = 0) -> None:
        """Dead-letter a record whose processing raised (a bug or a poison value), or
        failed ``retried`` times in a row (reason ``retries_exhausted``)."""
        if self.limiter.allow("processing error traceback"):
            log.error(
                "processing failed at %s\n%s",
                _where(record.source),
                redact_text("".join(traceback.format_exception(exc))),
            )
        text = f"{type(exc).__name__}: {exc}"
        if retried:
            text = f"still failing after {retried} retries: {text}"
        error = FieldError("", text)
        self.send(
            DeadLetter(
                "retries_exhausted" if retried else "processing_error",
                str(error),
                record.value or b"",
                record.source,
                record.key,
                (error,),
            )
        )

    def log_skipped(self, exc: BaseException, record: Record) -> None:
        """Say that a record was skipped (``errors.on_processing_error=skip``)."""
        if self.limiter.allow("skipped record"):
            log.warning(
                "skipped record at %s: %s",
                _where(record.source),
                redact_text(f"{type(exc).__name__}: {exc}"),
            )


def _where(source: SourcePosition) -> str:
    return f"{source.topic}[{source.partition}]@{source.offset}"
