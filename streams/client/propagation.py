"""W3C trace context in and out of Kafka headers and events, with OpenTelemetry's propagator.

Used by the client SDK (the publisher writes it) and by the worker (which reads it
and writes it into warnings). Only the OpenTelemetry *API* is needed: without a
configured SDK nothing is recorded, but a context the caller already has still
travels.
"""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.propagators.textmap import Getter, Setter

Headers = Sequence[tuple[str, bytes]]


class _HeaderGetter(Getter[Headers]):
    """Kafka headers are (str, bytes) pairs and may repeat a key: the first one wins."""

    def get(self, carrier: Headers, key: str) -> list[str] | None:
        for name, value in carrier or ():
            if name == key and value is not None:
                return [value.decode("utf-8", "replace") if isinstance(value, bytes) else value]
        return None

    def keys(self, carrier: Headers) -> list[str]:
        return [name for name, _ in carrier or ()]


class _HeaderSetter(Setter[list[tuple[str, bytes]]]):
    def set(self, carrier: list[tuple[str, bytes]], key: str, value: str) -> None:
        carrier.append((key, value.encode()))


HEADER_GETTER = _HeaderGetter()
HEADER_SETTER = _HeaderSetter()


def extract(
    trace_context: dict[str, str] | None, headers: Headers | None = None
) -> otel_context.Context | None:
    """The parent context of an event: its own ``trace_context``, else its record's
    ``traceparent`` header (a single-event record of another producer); None if neither."""
    if trace_context:
        return propagate.extract(trace_context)
    if headers and any(name == "traceparent" for name, _ in headers):
        return propagate.extract(headers, getter=HEADER_GETTER)
    return None


def carrier_of(span_context: otel_context.Context | None = None) -> dict[str, str] | None:
    """The current (or given) context as a ``trace_context`` dict; None when there is none."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier, context=span_context)
    return carrier or None


def headers_of(trace_context: dict[str, str] | None) -> list[tuple[str, bytes]]:
    """Record headers carrying ``trace_context`` (empty without one)."""
    if not trace_context:
        return []
    return [(key, value.encode()) for key, value in trace_context.items()]


def has_active_trace() -> bool:
    """True inside a valid span (recording or not): there is a context to pass on."""
    return trace.get_current_span().get_span_context().is_valid
