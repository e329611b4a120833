"""The worker's spans: one ``process`` span per event, child spans for the work it causes.

Faust's own :class:`faust.contrib.opentelemetry.OpenTelemetrySensor` opens one
span per *Faust message*; here a message is a bundle of up to
``kafka.bundle_max_records`` records, each of which may hold up to
``publisher.batch_max_events`` events of different agents, so the span has to be
opened per event, where the event is decoded. Attributes follow OpenTelemetry's
messaging conventions for Kafka (``process`` spans, CONSUMER kind), the GenAI
conventions where they name agent concepts (``gen_ai.conversation.id`` = loop
id, ``gen_ai.tool.name`` = action type) and ``loopwarden.*`` for loop health.

Each span is parented to the event's own ``trace_context`` (the publisher's
``create`` span), else to its record's ``traceparent`` header.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from opentelemetry import propagate, trace
from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer

from loopwarden.schemas.dead_letter import SourcePosition
from loopwarden.streams.client.propagation import carrier_of, extract


def messaging_attributes(
    source: SourcePosition, key: str | None, group: str | None
) -> dict[str, Any]:
    """The Kafka ``process`` attributes of a record at ``source``."""
    attributes: dict[str, Any] = {
        "messaging.system": "kafka",
        "messaging.operation.name": "process",
        "messaging.operation.type": "process",
        "messaging.destination.name": source.topic,
        "messaging.destination.partition.id": str(source.partition),
        "messaging.kafka.offset": source.offset,
    }
    if group:
        attributes["messaging.consumer.group.name"] = group
    if key is not None:
        attributes["messaging.kafka.message.key"] = key
    return attributes


def start_process_span(
    tracer: Tracer,
    source: SourcePosition,
    key: str | None,
    group: str | None,
    trace_context: dict[str, str] | None,
    headers: Sequence[Any],
    attributes: dict[str, Any] | None = None,
) -> trace.Span:
    """Start (not enter) the ``process {topic}`` CONSUMER span of one event read at
    ``source``, parented to its ``trace_context``, else to its record's headers."""
    merged = messaging_attributes(source, key, group)
    if attributes:
        merged.update(attributes)
    return tracer.start_span(
        f"process {source.topic}",
        context=extract(trace_context, headers),
        kind=SpanKind.CONSUMER,
        attributes=merged,
    )


class EventScope:
    """An event's open ``process`` span and, while detection runs, its ``detect`` child."""

    __slots__ = ("_detect", "_process", "trace_context")

    def __init__(self, process: trace.Span, detect: trace.Span) -> None:
        self._process = process
        self._detect = detect
        self.trace_context = carrier_of(trace.set_span_in_context(process))
        """The context warnings carry back (the process span's)."""

    def end(self, warnings: Sequence[Mapping[str, Any]], state: Any = None) -> None:
        """Close both spans; loop-health attributes from the warnings and the loop state."""
        detect = self._detect
        if state is not None:
            detect.set_attribute("loopwarden.loop.iteration", state.iteration)
        if warnings:
            kinds = sorted({w["kind"] for w in warnings})
            detect.set_attribute("loopwarden.spin.kind", kinds)
            detect.set_attribute("loopwarden.warning.level", warnings[-1]["level"])
            count = warnings[-1].get("consecutive_count")
            if count is not None:
                detect.set_attribute("loopwarden.spin.consecutive_count", count)
            self._process.set_attribute("loopwarden.warnings", len(warnings))
        detect.end()
        self._process.end()

    def fail(self, exc: BaseException) -> None:
        """Close both spans with ``exc`` recorded."""
        for span in (self._detect, self._process):
            span.record_exception(exc)
            span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            span.end()


class EventSpans:
    """Opens :class:`EventScope`\\ s for the action monitor's events (tracing on)."""

    def __init__(self, tracer: Tracer, group: str | None = None) -> None:
        self.tracer = tracer
        self.group = group

    def begin(self, event: Any, source: SourcePosition, headers: Sequence[Any]) -> EventScope:
        """Open the spans of ``event`` (an :class:`ActionEvent`) read at ``source``."""
        process = start_process_span(
            self.tracer,
            source,
            event.loop_id,
            self.group,
            event.trace_context,
            headers,
            {
                "messaging.message.id": event.event_id,
                "gen_ai.conversation.id": event.loop_id,
                "gen_ai.tool.name": event.payload.action_type,
            },
        )
        detect = self.tracer.start_span(
            "loopwarden.detect",
            context=trace.set_span_in_context(process),
            attributes={
                "gen_ai.conversation.id": event.loop_id,
                "gen_ai.tool.name": event.payload.action_type,
            },
        )
        return EventScope(process, detect)


@contextmanager
def process_span(
    tracer: Tracer | None,
    source: SourcePosition,
    *,
    key: str | None,
    trace_context: dict[str, str] | None,
    headers: Sequence[Any] = (),
    group: str | None = None,
    attributes: dict[str, Any] | None = None,
) -> Iterator[trace.Span | None]:
    """A current ``process`` span for one decoded event of another agent (guardrails,
    analyst, memory); yields None with tracing off."""
    if tracer is None:
        yield None
        return
    span = start_process_span(tracer, source, key, group, trace_context, headers, attributes)
    with trace.use_span(span, end_on_exit=True):
        yield span


@contextmanager
def child_span(
    tracer: Tracer | None, name: str, kind: SpanKind = SpanKind.INTERNAL, **attributes: Any
) -> Iterator[trace.Span | None]:
    """A span under the current one (a LanceDB write, an HTTP call); None with tracing off."""
    if tracer is None:
        yield None
        return
    with tracer.start_as_current_span(name, kind=kind, attributes=attributes) as span:
        yield span


@contextmanager
def chat_span(
    tracer: Tracer | None, model: str, url: str, headers: dict[str, str]
) -> Iterator[trace.Span | None]:
    """A GenAI ``chat {model}`` CLIENT span around one chat-completions call; its context is
    injected into ``headers`` so that a traced model server continues the trace."""
    parsed = urlsplit(url)
    attributes: dict[str, str | int] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": model,
        "http.request.method": "POST",
        "url.full": url,
        "server.address": parsed.hostname or "",
    }
    if parsed.port:
        attributes["server.port"] = parsed.port
    with child_span(tracer, f"chat {model}", SpanKind.CLIENT, **attributes) as span:
        if span is not None:
            propagate.inject(headers)
        yield span
