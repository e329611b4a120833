"""W3C trace context as it travels inside an event (``trace_context``).

A record's headers can carry one ``traceparent``, but the publisher batches up to
``publisher.batch_max_events`` events of different agents into one record: each
event therefore carries the context it was published in, as the carrier dict the
OpenTelemetry propagators read and write (``traceparent``, optional
``tracestate``). Warnings and reflection requests carry the context of the event
that caused them, so the agent's next span can link back.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator

TRACE_KEYS = ("traceparent", "tracestate")
MAX_TRACEPARENT = 128
MAX_TRACESTATE = 512


def _carrier(value: dict[str, str]) -> dict[str, str]:
    unknown = set(value) - set(TRACE_KEYS)
    if unknown:
        raise ValueError(f"unknown key(s) {sorted(unknown)}; expected {list(TRACE_KEYS)}")
    if len(value.get("traceparent", "")) > MAX_TRACEPARENT:
        raise ValueError(f"traceparent longer than {MAX_TRACEPARENT} characters")
    if len(value.get("tracestate", "")) > MAX_TRACESTATE:
        raise ValueError(f"tracestate longer than {MAX_TRACESTATE} characters")
    return value


TraceContext = Annotated[dict[str, str], AfterValidator(_carrier)]
"""``{"traceparent": "00-<trace id>-<span id>-<flags>", "tracestate": "…"}``."""


Carrier = TypeVar("Carrier")
"""A record type with a ``trace_context`` key (a warning, request or advice record)."""


def carried(output: Carrier, trace_context: dict[str, str] | None) -> Carrier:
    """``output`` (a warning, request or advice record) carrying ``trace_context``
    (None: none)."""
    record: dict[str, Any] = output  # type: ignore[assignment]  # every Carrier is a dict
    record["trace_context"] = trace_context or None
    return output
