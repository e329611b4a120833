"""Memory writes (seed 000 §3.1, seed 002): what an agent asks loopwarden to remember."""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    PrivateAttr,
    WithJsonSchema,
)

from loopwarden.schemas.events import SCHEMA_VERSION, EventId, Timestamp, validate_envelope
from loopwarden.schemas.ids import derived_id
from loopwarden.schemas.redaction import REDACTED, redact_fields

if TYPE_CHECKING:
    import numpy as np

Score = Annotated[float, Field(ge=0.0, le=1.0)]
MemoryKey = Literal["scope", "memory"]
"""What keys a record of the memory-writes topic (``publisher.memory_key``)."""
MAX_EMBEDDING_DIMS = 8192
ARROW_MEDIA_TYPE = "application/vnd.apache.arrow.stream"
"""The content type of a memory-writes record holding Arrow IPC columns."""


def as_vector(value: Any) -> np.ndarray:
    """An embedding as float32: a JSON array of numbers, or a base64 string of
    little-endian float32 values (a quarter of the bytes, and no float parsing:
    the form OpenAI's ``encoding_format="base64"`` returns). Needs numpy."""
    try:
        import numpy as np
    except ImportError:
        raise ValueError(
            "an embedding needs numpy on the client: pip install 'loopwarden[bulk]'"
        ) from None
    if isinstance(value, np.ndarray):
        vector = value.astype(np.float32, copy=False).ravel()
    elif isinstance(value, str):
        try:
            raw = binascii.a2b_base64(value, strict_mode=True)
        except (binascii.Error, ValueError):
            raise ValueError("a string embedding must be base64 of float32 values") from None
        if len(raw) % 4:
            raise ValueError(f"base64 embedding of {len(raw)} bytes: not float32 values")
        vector = np.frombuffer(raw, dtype="<f4")  # read-only, never changed in place
    elif isinstance(value, list | tuple):
        if any(isinstance(x, bool) or not isinstance(x, int | float) for x in value):
            raise ValueError("embedding values must be numbers")
        vector = np.asarray(value, dtype=np.float32)
    else:
        raise ValueError("embedding must be an array of numbers or a base64 string")
    if not 1 <= vector.size <= MAX_EMBEDDING_DIMS:
        raise ValueError(f"embedding has {vector.size} values; 1 to {MAX_EMBEDDING_DIMS} allowed")
    if not np.isfinite(vector).all():
        raise ValueError("embedding holds NaN or infinity")
    return vector


def vector_base64(vector: np.ndarray) -> str:
    """The base64 form of an embedding (little-endian float32)."""
    return base64.b64encode(vector.astype("<f4", copy=False).tobytes()).decode("ascii")


Vector = Annotated[
    Any,
    BeforeValidator(as_vector),
    PlainSerializer(vector_base64, return_type=str, when_used="json"),
    WithJsonSchema(
        {
            "oneOf": [
                {"type": "array", "items": {"type": "number"}, "maxItems": MAX_EMBEDDING_DIMS},
                {"type": "string", "contentEncoding": "base64"},
            ],
            "description": "Numbers, or base64 of little-endian float32 values.",
        }
    ),
]
"""An embedding, held as a float32 numpy array; JSON output is its base64 form."""


class CorePactScores(BaseModel):
    """The seven C.O.R.E. P.A.C.T. dimensions, each in [0, 1]."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    c: Score = 0.5
    o: Score = 0.5
    r: Score = 0.5
    e: Score = 0.0
    p: Score = 0.0
    a: Score = 0.5
    t: Score = 0.5


class MemoryPayload(BaseModel):
    """One memory to store."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    memory_id: str | None = Field(None, max_length=200, description="Default: from event id.")
    scope: str = Field("default", min_length=1, max_length=200, description="Namespace.")
    content: str = Field(min_length=1, max_length=100_000)
    tags: list[str] = Field(default_factory=list)
    potential_questions: list[str] = Field(default_factory=list)
    entity_refs: list[str] = Field(default_factory=list)
    memory_type: str = "fact"
    layer: Literal["short_term", "long_term"] = "short_term"
    scores: CorePactScores = Field(default_factory=CorePactScores)
    importance: Score | None = Field(None, description="Default: the weighted scores.")
    source_reliability: Score = 0.7
    embedding: Vector | None = Field(
        None, description="The agent's own vector (the table's dimensions), else embedded."
    )
    source_loop_id: str | None = None
    source_event_id: str | None = None


class MemoryWrite(BaseModel):
    """The envelope of a memory write."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    event_id: EventId
    schema_version: int = Field(SCHEMA_VERSION, ge=1, le=SCHEMA_VERSION)
    type: Literal["memory_write"] = "memory_write"
    occurred_at: Timestamp
    payload: MemoryPayload
    _redaction: bool | None = PrivateAttr(None)  # None: not scanned; else: secrets found

    def redacted(self) -> MemoryWrite:
        """This write with secrets in its text fields redacted (scanned once: a write
        already redacted is returned as it is)."""
        if self._redaction is not None:
            return self
        payload = redact_fields(
            self.payload, ("content", "tags", "potential_questions", "entity_refs")
        )
        write = self if payload is self.payload else self.model_copy(update={"payload": payload})
        write._redaction = payload is not self.payload or _holds_marker(payload)
        return write

    @property
    def memory_id(self) -> str:
        """The id its memory is stored under (see :func:`memory_id_for`)."""
        return memory_id_for(self.payload.scope, self.event_id, self.payload.memory_id)

    @property
    def had_secrets(self) -> bool:
        """True when this write's texts had secrets redacted: here, or already by the
        publisher (the Python client redacts before sending)."""
        return bool(self._redaction)


def memory_id_for(scope: str, event_id: str, memory_id: str | None = None) -> str:
    """A memory's id: the one its write names, else derived from scope and event id (so
    a replayed write finds the memory it stored)."""
    return memory_id or derived_id("memory", scope, event_id)


def memory_record_key(scope: str, memory_id: str, key: MemoryKey) -> bytes:
    """The Kafka key of a memory write: its scope (a scope's writes in order on one
    partition, every check exact with many workers) or its memory id (writes spread
    over every partition and worker; a near-duplicate that two workers store at the
    same moment is merged by the next maintenance cycle)."""
    return (scope if key == "scope" else memory_id).encode()


def _holds_marker(payload: MemoryPayload) -> bool:
    texts = (payload.content, *payload.tags, *payload.potential_questions, *payload.entity_refs)
    return any(REDACTED in text for text in texts)


def validate_memory_write(obj: Any) -> MemoryWrite:
    """Validate a memory write, with its secrets redacted; errors name every wrong field."""
    return validate_envelope(obj, MemoryWrite.model_validate).redacted()
