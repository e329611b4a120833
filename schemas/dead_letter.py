"""Dead letters: input that could not be processed, kept byte for byte.

A dead-letter record's value is the original bytes (for an element of a batched
record: that element, re-encoded). Why it failed and where it came from travel
in headers, in the style of Kafka Connect's dead-letter queue, so the original is
never re-wrapped and never grows::

    lw.dlq.reason        decode | validation | too_large
    lw.dlq.message       readable explanation, e.g. "payload.action_type: Field required"
    lw.dlq.errors        JSON list of {"path", "message"}
    lw.dlq.topic / lw.dlq.partition / lw.dlq.offset / lw.dlq.timestamp   the source
    lw.dlq.batch_index   position inside a batched record (absent for single events)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from loopwarden.errors import EventError, FieldError
from loopwarden.schemas import codec

_PREFIX = "lw.dlq."


@dataclass(frozen=True)
class SourcePosition:
    """Where a record was read from."""

    topic: str
    partition: int
    offset: int
    timestamp_ms: int | None = None


@dataclass(frozen=True)
class DeadLetter:
    """One rejected input with its reason and source position."""

    reason: str
    message: str
    value: bytes
    source: SourcePosition
    key: bytes | None = None
    errors: tuple[FieldError, ...] = ()
    batch_index: int | None = None
    extra: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_error(
        cls,
        error: EventError,
        value: bytes,
        source: SourcePosition,
        key: bytes | None = None,
        batch_index: int | None = None,
    ) -> DeadLetter:
        """Build a dead letter from the error raised while decoding ``value``."""
        return cls(
            reason=error.reason,
            message=str(error),
            value=value,
            source=source,
            key=key,
            errors=error.errors,
            batch_index=batch_index,
        )

    def headers(self) -> list[tuple[str, bytes]]:
        """Kafka headers describing the failure."""
        headers = [
            (_PREFIX + "reason", self.reason.encode()),
            (_PREFIX + "message", self.message.encode()),
            (
                _PREFIX + "errors",
                codec.dumps([{"path": e.path, "message": e.message} for e in self.errors]),
            ),
            (_PREFIX + "topic", self.source.topic.encode()),
            (_PREFIX + "partition", str(self.source.partition).encode()),
            (_PREFIX + "offset", str(self.source.offset).encode()),
        ]
        if self.source.timestamp_ms is not None:
            headers.append((_PREFIX + "timestamp", str(self.source.timestamp_ms).encode()))
        if self.batch_index is not None:
            headers.append((_PREFIX + "batch_index", str(self.batch_index).encode()))
        headers.extend((_PREFIX + k, v.encode()) for k, v in self.extra.items())
        return headers

    @classmethod
    def from_record(
        cls, value: bytes, key: bytes | None, headers: Sequence[tuple[str, bytes]]
    ) -> DeadLetter:
        """Read a dead letter back from a consumed record."""
        found = {k[len(_PREFIX) :]: v for k, v in headers if k.startswith(_PREFIX)}

        def text(name: str, default: str = "") -> str:
            raw = found.pop(name, None)
            return raw.decode("utf-8", "replace") if raw is not None else default

        errors = tuple(
            FieldError(e["path"], e["message"]) for e in codec.loads(found.pop("errors", b"[]"))
        )
        reason = text("reason", "unknown")
        message = text("message")
        topic = text("topic")
        partition = int(text("partition", "-1"))
        offset = int(text("offset", "-1"))
        timestamp = text("timestamp")
        batch_index = text("batch_index")
        return cls(
            reason=reason,
            message=message,
            value=value,
            source=SourcePosition(topic, partition, offset, int(timestamp) if timestamp else None),
            key=key,
            errors=errors,
            batch_index=int(batch_index) if batch_index else None,
            extra={k: v.decode("utf-8", "replace") for k, v in found.items()},
        )

    def to_json_dict(self, preview_bytes: int = 200) -> dict[str, Any]:
        """A readable summary (with a preview of the original bytes)."""
        return {
            "reason": self.reason,
            "message": self.message,
            "errors": [{"path": e.path, "message": e.message} for e in self.errors],
            "source": {
                "topic": self.source.topic,
                "partition": self.source.partition,
                "offset": self.source.offset,
                "timestamp_ms": self.source.timestamp_ms,
            },
            "batch_index": self.batch_index,
            "key": self.key.decode("utf-8", "replace") if self.key is not None else None,
            "size_bytes": len(self.value),
            "preview": self.value[:preview_bytes].decode("utf-8", "replace"),
        }
