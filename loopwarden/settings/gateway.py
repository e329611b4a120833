"""Settings of ``loopwarden gateway`` (``LOOPWARDEN_GATEWAY__*``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class GatewaySettings(BaseModel):
    """Where the gateway listens and which model APIs it forwards to."""

    model_config = ConfigDict(frozen=True)

    bind: str = Field("127.0.0.1", description="Interface the gateway listens on.")
    port: int = Field(4100, ge=1, le=65535, description="Port the gateway listens on.")
    openai_base_url: str = Field(
        "https://api.openai.com/v1",
        description="Upstream of the OpenAI-compatible APIs (Chat Completions, Responses "
        "and every other /v1 path but /v1/messages), as OPENAI_BASE_URL is written.",
    )
    anthropic_base_url: str = Field(
        "https://api.anthropic.com",
        description="Upstream of Anthropic Messages (/v1/messages, and any request with an "
        "anthropic-version header), as ANTHROPIC_BASE_URL is written.",
    )
    upstream_timeout_s: float = Field(
        600.0, gt=0, description="How long an upstream answer may take (a long stream too)."
    )
    max_loops: int = Field(
        10_000, ge=1, description="Conversations kept (their published steps) at most."
    )
    loop_ttl_s: float = Field(
        3600.0, gt=0, description="A conversation not seen for this long is forgotten."
    )
