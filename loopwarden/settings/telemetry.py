"""Telemetry settings: traces, metrics, the periodic summary line."""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

Exporter = Literal["none", "console", "otlp"]


class TelemetrySettings(BaseModel):
    """What a worker reports, and where.

    Spans and metrics go through the OpenTelemetry SDK. ``otlp`` sends them over
    OTLP/HTTP to ``otlp_endpoint`` (else to the SDK's standard
    ``OTEL_EXPORTER_OTLP_ENDPOINT``, default ``http://localhost:4318``). The
    Prometheus scrape endpoint (``/metrics``) is served on the worker's web port
    whatever the exporters are.
    """

    model_config = ConfigDict(frozen=True)

    service_name: str = Field(
        "loopwarden-worker", min_length=1, description="service.name of spans and metrics."
    )
    traces_exporter: Exporter = Field(
        "none", description="none (no spans are made), console (stdout) or otlp."
    )
    metrics_exporter: Exporter = Field(
        "none", description="Push metrics: none (Prometheus scrape only), console or otlp."
    )
    otlp_endpoint: str | None = Field(
        None,
        description="OTLP/HTTP base URL, e.g. http://otel-collector:4318 (/v1/traces and "
        "/v1/metrics are appended).",
    )

    @field_validator("otlp_endpoint")
    @classmethod
    def _an_http_url(cls, value: str | None) -> str | None:
        if value is None:
            return value
        parsed = urlsplit(value)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError("expected an http(s) URL such as http://otel-collector:4318")
        return value

    export_interval_s: float = Field(
        5.0, gt=0, description="How often spans are batched out and metrics pushed."
    )
    sample_ratio: float = Field(
        1.0,
        ge=0,
        le=1,
        description="Share of traces started here that are recorded (a publisher's "
        "sampling decision is followed).",
    )
    prometheus: bool = Field(True, description="Serve /metrics on the web port.")
    summary_interval_s: float = Field(
        60.0,
        ge=0,
        description="A one-line summary (events/s, warnings, dead letters, lag) logged at "
        "info this often; 0: never.",
    )
