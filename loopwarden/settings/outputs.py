"""Settings of the output sinks besides Kafka (``LOOPWARDEN_WEBHOOK__*``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator


class WebhookSettings(BaseModel):
    """POST named outputs (default: warnings) to an HTTP endpoint as they are produced.

    Off without ``url``. Best effort beside the Kafka record of the output: a batch
    is retried with backoff, then dropped with a log line and a count; a full queue
    drops the newest output the same way. The worker never waits for the webhook.
    """

    model_config = ConfigDict(frozen=True)

    url: str | None = Field(None, description="Endpoint to POST outputs to; None: no webhook.")
    outputs: frozenset[str] = Field(
        frozenset({"warnings"}),
        description="Named outputs sent (warnings, decisions, advice, reflections, …).",
    )
    token: SecretStr | None = Field(None, description="Sent as 'Authorization: Bearer …'.")
    timeout_s: float = Field(5.0, gt=0, description="Per-request timeout.")
    max_batch: int = Field(100, ge=1, description="Outputs in one POST at most.")
    max_queue: int = Field(10_000, ge=1, description="Outputs waiting at most; more are dropped.")
    max_retries: int = Field(5, ge=0, description="Retries of a failed POST before it is dropped.")
    retry_initial_s: float = Field(0.5, gt=0, description="First wait between retries (doubles).")

    @field_validator("url")
    @classmethod
    def _http(cls, url: str | None) -> str | None:
        if url is not None and not url.startswith(("http://", "https://")):
            raise ValueError(f"webhook url must start with http:// or https://, got {url!r}")
        return url
