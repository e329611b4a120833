"""Memory writes (seed 000 §3.1, seed 002): what an agent asks loopwarden to remember."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from loopwarden.schemas.events import SCHEMA_VERSION, EventId, Timestamp, validate_envelope
from loopwarden.schemas.redaction import redact_fields

Score = Annotated[float, Field(ge=0.0, le=1.0)]


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
    embedding: list[Annotated[float, Field(allow_inf_nan=False)]] | None = Field(
        None, max_length=8192
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

    def redacted(self) -> MemoryWrite:
        """This write with secrets in its text fields redacted."""
        payload = redact_fields(
            self.payload, ("content", "tags", "potential_questions", "entity_refs")
        )
        return self if payload is self.payload else self.model_copy(update={"payload": payload})


def validate_memory_write(obj: Any) -> MemoryWrite:
    """Validate a memory write, with its secrets redacted; errors name every wrong field."""
    return validate_envelope(obj, MemoryWrite.model_validate).redacted()
