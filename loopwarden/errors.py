"""The exception tree of loopwarden.

LoopwardenError
├── ConfigurationError        bad settings or a missing optional part
├── EventError                an input record that cannot become an event
│   ├── EventDecodeError      not JSON, or not a JSON object / array of objects
│   ├── EventValidationError  JSON that breaks the event contract (carries field paths)
│   └── EventTooLargeError    larger than ``limits.max_event_bytes``
├── PublishError              the broker did not accept published events
│   └── PublisherUnavailableError   … because nothing answered at the bootstrap servers
└── BrokerError               a broker could not be started or reached
    └── BrokerUnavailableError      nothing answers at the bootstrap servers
        (PublisherUnavailableError is one too)
"""

from __future__ import annotations

from dataclasses import dataclass


class LoopwardenError(Exception):
    """Root of every error loopwarden raises on purpose."""


class ConfigurationError(LoopwardenError):
    """A setting is invalid or an optional dependency is missing."""


@dataclass(frozen=True)
class FieldError:
    """One contract violation: where (a dotted path) and what was wrong."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class EventError(LoopwardenError):
    """An input record that cannot be turned into an event.

    ``reason`` is short and machine-groupable (``decode``, ``validation``,
    ``too_large``); ``str(error)`` is the readable explanation.
    """

    reason = "invalid"

    def __init__(self, message: str, errors: tuple[FieldError, ...] = ()) -> None:
        super().__init__(message)
        self.errors = errors


class EventDecodeError(EventError):
    """The bytes are not JSON, or not an object / array of objects."""

    reason = "decode"


class EventValidationError(EventError):
    """The JSON does not satisfy the event contract."""

    reason = "validation"


class EventTooLargeError(EventError):
    """The event is larger than the configured limit."""

    reason = "too_large"


class PublishError(LoopwardenError):
    """Publishing failed; ``failed`` holds the ids of events not delivered."""

    def __init__(self, message: str, failed: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.failed = failed


class BrokerError(LoopwardenError):
    """A broker (the embedded one, or Kafka) could not be started or reached."""


class BrokerUnavailableError(BrokerError):
    """Nothing answers at the bootstrap servers (the message names them)."""


class PublisherUnavailableError(PublishError, BrokerUnavailableError):
    """A publisher could not reach the broker: catch it as either parent."""


class NothingReceivedError(LoopwardenError):
    """A wait for a record (a decision, an outcome, ``tail --timeout``) timed out."""
