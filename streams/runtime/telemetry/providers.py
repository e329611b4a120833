"""The worker's OpenTelemetry SDK: tracer and meter providers built from settings.

A library never installs providers; the worker is an application, so
:func:`start_telemetry` may also make them the process's global ones (then
instrumentation that uses the global API reports into the same pipeline).
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    ConsoleMetricExporter,
    MetricReader,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SpanExporter,
)
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
from prometheus_client import CollectorRegistry

from loopwarden.settings import Settings
from loopwarden.settings.telemetry import TelemetrySettings
from loopwarden.version import VERSION

SCOPE = "loopwarden"


@dataclass
class Telemetry:
    """The providers a worker reports through; ``tracer_provider`` is None when no spans
    are made (``telemetry.traces_exporter=none``)."""

    meter_provider: MeterProvider
    tracer_provider: TracerProvider | None = None
    registry: CollectorRegistry | None = None
    """Prometheus registry served at ``/metrics`` (None: not served)."""
    readers: list[MetricReader] = field(default_factory=list)

    @property
    def tracer(self) -> trace.Tracer | None:
        """loopwarden's tracer, or None when tracing is off (callers skip span work)."""
        if self.tracer_provider is None:
            return None
        return self.tracer_provider.get_tracer(SCOPE, VERSION)

    @property
    def meter(self) -> metrics.Meter:
        """loopwarden's meter."""
        return self.meter_provider.get_meter(SCOPE, VERSION)

    def shutdown(self) -> None:
        """Export what is pending and stop the exporters."""
        if self.tracer_provider is not None:
            self.tracer_provider.shutdown()
        self.meter_provider.shutdown()


def resource_of(settings: Settings) -> Resource:
    """service.name, version and instance id, and the consumer group (``app_id``)."""
    return Resource.create(
        {
            "service.name": settings.telemetry.service_name,
            "service.version": VERSION,
            "service.instance.id": f"{socket.gethostname()}-{os.getpid()}",
            "loopwarden.app_id": settings.app_id,
        }
    )


def start_telemetry(
    settings: Settings,
    *,
    span_exporter: SpanExporter | None = None,
    install_global: bool = False,
) -> Telemetry:
    """Build the providers ``settings.telemetry`` asks for (``span_exporter``: an extra
    exporter, e.g. an in-memory one in tests, which turns tracing on)."""
    conf = settings.telemetry
    resource = resource_of(settings)
    readers: list[MetricReader] = []
    registry = None
    if conf.prometheus and settings.web_port:
        from opentelemetry.exporter.prometheus import PrometheusMetricReader

        registry = CollectorRegistry()
        readers.append(PrometheusMetricReader(registry=registry))
    push = _metric_exporter(conf)
    if push is not None:
        readers.append(
            PeriodicExportingMetricReader(push, export_interval_millis=conf.export_interval_s * 1e3)
        )
    telemetry = Telemetry(
        meter_provider=MeterProvider(resource=resource, metric_readers=readers),
        registry=registry,
        readers=readers,
    )
    exporters = [e for e in (_span_exporter(conf), span_exporter) if e is not None]
    if exporters:
        provider = TracerProvider(
            resource=resource, sampler=ParentBased(TraceIdRatioBased(conf.sample_ratio))
        )
        for exporter in exporters:
            provider.add_span_processor(
                BatchSpanProcessor(exporter, schedule_delay_millis=conf.export_interval_s * 1e3)
            )
        telemetry.tracer_provider = provider
    if install_global:
        metrics.set_meter_provider(telemetry.meter_provider)
        if telemetry.tracer_provider is not None:
            trace.set_tracer_provider(telemetry.tracer_provider)
    return telemetry


def _span_exporter(conf: TelemetrySettings) -> SpanExporter | None:
    if conf.traces_exporter == "console":
        return ConsoleSpanExporter()
    if conf.traces_exporter == "otlp":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter(**_endpoint(conf, "traces"))
    return None


def _metric_exporter(conf: TelemetrySettings) -> Any:
    if conf.metrics_exporter == "console":
        return ConsoleMetricExporter()
    if conf.metrics_exporter == "otlp":
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

        return OTLPMetricExporter(**_endpoint(conf, "metrics"))
    return None


def _endpoint(conf: TelemetrySettings, signal: str) -> dict[str, Any]:
    if not conf.otlp_endpoint:
        return {}  # the SDK's OTEL_EXPORTER_OTLP_* variables, else localhost:4318
    return {"endpoint": f"{conf.otlp_endpoint.rstrip('/')}/v1/{signal}"}
