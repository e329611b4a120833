"""Ingest settings: the Claude Code hook endpoint and the OTLP span ingest."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class IngestSettings(BaseModel):
    """Events that reach loopwarden without its client: HTTP hooks and OTLP spans."""

    model_config = ConfigDict(frozen=True)

    hook_sessions: int = Field(
        10_000,
        ge=1,
        description="Claude Code hooks: sessions whose pending warnings a worker keeps "
        "(least recently used dropped first).",
    )
    hook_session_ttl_s: float = Field(
        3600.0,
        gt=0,
        description="Claude Code hooks: a session's warnings are dropped after "
        "this long without a new one.",
    )
    otlp_encoding: Literal["auto", "otlp_proto", "otlp_json"] = Field(
        "auto",
        description="Encoding of the span topic, as the OpenTelemetry Collector's Kafka "
        "exporter writes it; auto: JSON when the record starts with '{'.",
    )
