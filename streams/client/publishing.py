"""The publisher's side of tracing: one ``create`` span per event, its context in the event.

OpenTelemetry's messaging conventions for batch publishing: each message gets a
``create`` span when it is handed to the client, and its context travels with
the message. The publisher batches events of different agents into one record,
so the context goes into the event itself (``trace_context``), and into the
record's ``traceparent`` header as well when a record holds one event (the form
other Kafka clients and instrumentations read).

Nothing is made when there is nothing to continue: no configured SDK (or
``tracer_provider``) and no active span. With an active span but no SDK the
caller's own context is passed on unchanged.
"""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.trace import SpanKind, TracerProvider

from loopwarden.schemas.events import ActionEvent
from loopwarden.streams.client.propagation import carrier_of, has_active_trace

_NOOP_PROVIDERS = frozenset({"ProxyTracerProvider", "NoOpTracerProvider"})
TRACER_NAME = "loopwarden.publisher"


def sdk_configured() -> bool:
    """True once the application has installed a real tracer provider."""
    return type(trace.get_tracer_provider()).__name__ not in _NOOP_PROVIDERS


class PublishSpans:
    """Stamps events with the context of their ``create`` span (see the module doc)."""

    def __init__(self, topic: str, tracer_provider: TracerProvider | None = None) -> None:
        self.topic = topic
        self._explicit = tracer_provider is not None
        self._tracer = trace.get_tracer(TRACER_NAME, tracer_provider=tracer_provider)

    def stamp(self, event: ActionEvent) -> ActionEvent:
        """``event`` with its ``trace_context`` set (kept if the caller set one)."""
        if event.trace_context is not None:
            return event
        if not (self._explicit or sdk_configured()):
            if not has_active_trace():
                return event
            return event.model_copy(update={"trace_context": carrier_of()})
        attributes = {
            "messaging.system": "kafka",
            "messaging.operation.name": "create",
            "messaging.operation.type": "create",
            "messaging.destination.name": self.topic,
            "messaging.message.id": event.event_id,
            "messaging.kafka.message.key": event.loop_id,
            "gen_ai.conversation.id": event.loop_id,
            "gen_ai.tool.name": event.payload.action_type,
        }
        with self._tracer.start_as_current_span(
            f"create {self.topic}", kind=SpanKind.PRODUCER, attributes=attributes
        ):
            carrier = carrier_of()
        return event.model_copy(update={"trace_context": carrier}) if carrier else event
