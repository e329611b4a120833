"""The exception tree of loopwarden. Every error says whether a retry can cure it.

``retriable`` (as aiokafka's ``KafkaError.retriable``) is decided where the failure
is understood — the Kafka, LanceDB and HTTP boundaries — never from message text.
The worker's runner acts on it (:mod:`loopwarden.streams.runtime.runner`): a retriable
error is retried a bounded number of times, an unavailable storage of our own
pauses the partition and says so, anything else follows ``errors.on_processing_error``.

LoopwardenError                                    retriable
├── ConfigurationError        bad settings or a missing optional part          no
├── EventError                an input record that cannot become an event      no
│   ├── EventDecodeError      not JSON, or not a JSON object / array of objects
│   ├── EventValidationError  JSON that breaks the event contract (field paths)
│   └── EventTooLargeError    larger than ``limits.max_event_bytes``
├── PublishError              the broker did not accept published events       yes
│   └── PublisherUnavailableError   … nothing answered at the bootstrap servers
├── BrokerError               a broker could not be started or reached         no
│   └── BrokerUnavailableError      nothing answers at the bootstrap servers   yes
│       (PublisherUnavailableError is one too)
├── StorageError              LanceDB failed on a healthy storage (the data)    no
│   └── StorageUnavailableError     the storage itself is away: pauses          yes
├── ModelEndpointError        an OpenAI-compatible endpoint failed          per case
├── ApiError                  an HTTP request answered with an error status per case
├── TransientError            a dependency is unavailable for now              yes
└── NothingReceivedError      a wait for a record timed out                    no
"""

from __future__ import annotations

from dataclasses import dataclass


class LoopwardenError(Exception):
    """Root of every error loopwarden raises on purpose.

    ``retriable``: True when the same operation may succeed if tried again later
    (a class default that an instance may override).
    """

    retriable: bool = False


class TransientError(LoopwardenError):
    """A dependency is unavailable for now: retry later."""

    retriable = True


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

    retriable = True

    def __init__(self, message: str, failed: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.failed = failed


class BrokerError(LoopwardenError):
    """A broker (the embedded one, or Kafka) could not be started or reached."""


class BrokerUnavailableError(BrokerError):
    """Nothing answers at the bootstrap servers (the message names them)."""

    retriable = True


class PublisherUnavailableError(PublishError, BrokerUnavailableError):
    """A publisher could not reach the broker: catch it as either parent."""


class NothingReceivedError(LoopwardenError):
    """A wait for a record (a decision, an outcome, ``tail --timeout``) timed out."""


class StorageError(LoopwardenError):
    """LanceDB failed while the storage itself answers: the data or the call is at fault,
    and the same call would fail again."""


class StorageUnavailableError(StorageError):
    """The storage itself is away (missing, replaced, unwritable, unreachable).

    A record that meets it is not at fault: the worker pauses the partition, says so
    (a log line, ``/ready`` unready, the ``loopwarden.agent.paused`` gauge) and tries
    the same record again until the storage answers.
    """

    retriable = True
    pauses = True


class ModelEndpointError(LoopwardenError):
    """An OpenAI-compatible endpoint gave no usable answer. Retriable when it timed
    out, was unreachable or answered 408/429/5xx; not for a bad request or output."""

    def __init__(self, message: str, *, retriable: bool) -> None:
        super().__init__(message)
        self.retriable = retriable


class ApiError(LoopwardenError):
    """An HTTP request to the worker answered with an error status and a readable
    reason (``errors``: field paths and messages). Retriable for 503 and 504."""

    def __init__(
        self, status: int, reason: str, errors: list[dict[str, str]] | None = None
    ) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.errors = errors or []
        self.retriable = status in (503, 504)


def is_retriable(exc: BaseException) -> bool:
    """Whether a retry may cure ``exc``: its own ``retriable`` (ours, aiokafka's), else
    True for the built-in kinds that mean "not now" (``OSError``: timeouts, connections,
    other I/O)."""
    retriable = getattr(exc, "retriable", None)
    if isinstance(retriable, bool):
        return retriable
    return isinstance(exc, OSError)


def pauses(exc: BaseException) -> bool:
    """Whether ``exc`` says our own storage is away (pause and say so, not dead-letter)."""
    return bool(getattr(exc, "pauses", False))
