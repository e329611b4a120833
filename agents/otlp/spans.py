"""OTLP trace payloads → tool-call action events (pure).

The OpenTelemetry Collector's Kafka exporter writes each batch of spans as one record,
``otlp_proto`` (the ``TracesData`` protobuf) or ``otlp_json`` (OTLP/JSON: camelCase
names, hex ids, 64-bit integers as strings). Spans that follow the GenAI semantic
conventions for tool execution (``gen_ai.operation.name = execute_tool``) become
action events:

============================  ==========================================
span                          action event
============================  ==========================================
``gen_ai.conversation.id``    loop id (required: else a dead letter)
``gen_ai.tool.name``          ``action_type`` (required)
``gen_ai.tool.call.id``       ``tool_call_id``
``gen_ai.tool.call.arguments`` ``params`` (JSON object text, or a value)
``gen_ai.tool.call.result``   ``result``
status ERROR / ``error.type`` ``success: false``, ``error_message``
``error.type`` a refusal       ``rejected`` (a validation error, or an HTTP
/ ``http.response.status_code``  4xx but 408 and 429: :mod:`~loopwarden.schemas.refusals`)
start, end time               ``occurred_at``, ``duration_ms``
trace and span id             ``event_id`` (redelivery is idempotent), ``trace_context``
============================  ==========================================

Other spans (model calls, agent invocations, HTTP) are not actions and are skipped.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from google.protobuf.message import DecodeError
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Status, TracesData

from loopwarden.errors import EventDecodeError, EventError, FieldError
from loopwarden.schemas import codec
from loopwarden.schemas.events import ActionEvent
from loopwarden.schemas.ids import derived_id
from loopwarden.schemas.refusals import refused_status, refused_type
from loopwarden.schemas.tool_calls import canonical_args, result_text
from loopwarden.streams.client.event_builder import make_action_event

STATUS_ERROR = Status.STATUS_CODE_ERROR  # 2, in both encodings
TOOL_OPERATION = "execute_tool"


class SpanError(EventError):
    """A tool span that cannot become an action event (it is dead-lettered)."""

    reason = "otlp_span"


@dataclass(frozen=True, slots=True)
class Span:
    """The parts of a span the ingest reads, whatever the encoding."""

    trace_id: str
    span_id: str
    name: str
    start_ns: int
    end_ns: int
    status_code: int
    status_message: str
    attributes: dict[str, Any]

    @property
    def is_tool_call(self) -> bool:
        operation = self.attributes.get("gen_ai.operation.name")
        return operation == TOOL_OPERATION or (
            operation is None and self.name.startswith(TOOL_OPERATION)
        )


# -- decoding ---------------------------------------------------------------------------------


def _proto_value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_proto_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _proto_value(kv.value) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return value.bytes_value.hex()
    return None if kind is None else getattr(value, kind)


def _proto_spans(data: bytes) -> Iterator[Span]:
    try:
        traces = TracesData.FromString(data)
    except DecodeError as exc:
        raise EventDecodeError(f"not an OTLP protobuf TracesData: {exc}") from exc
    for resource_spans in traces.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                yield Span(
                    span.trace_id.hex(),
                    span.span_id.hex(),
                    span.name,
                    span.start_time_unix_nano,
                    span.end_time_unix_nano,
                    span.status.code,
                    span.status.message,
                    {kv.key: _proto_value(kv.value) for kv in span.attributes},
                )


def _json_value(value: dict[str, Any]) -> Any:
    for kind, item in value.items():
        if kind == "intValue":
            return int(item)
        if kind == "arrayValue":
            return [_json_value(v) for v in item.get("values", [])]
        if kind == "kvlistValue":
            return {kv["key"]: _json_value(kv.get("value", {})) for kv in item.get("values", [])}
        return item
    return None


def _json_spans(data: bytes) -> Iterator[Span]:
    try:
        traces = codec.loads(data)
        for resource_spans in traces.get("resourceSpans", []):
            for scope_spans in resource_spans.get("scopeSpans", []):
                for span in scope_spans.get("spans", []):
                    status = span.get("status") or {}
                    yield Span(
                        span.get("traceId", ""),
                        span.get("spanId", ""),
                        span.get("name", ""),
                        int(span.get("startTimeUnixNano", 0)),
                        int(span.get("endTimeUnixNano", 0)),
                        _status_code(status.get("code", 0)),
                        status.get("message", ""),
                        {
                            kv["key"]: _json_value(kv.get("value", {}))
                            for kv in span.get("attributes", [])
                        },
                    )
    except (EventDecodeError, AttributeError, KeyError, TypeError, ValueError) as exc:
        raise EventDecodeError(f"not OTLP/JSON trace data: {exc}") from exc


def _status_code(code: Any) -> int:
    if isinstance(code, str):  # the enum's name is accepted in OTLP/JSON too
        return int(Status.StatusCode.Value(code)) if code.startswith("STATUS") else int(code)
    return int(code)


def decode_spans(data: bytes, encoding: str = "auto") -> list[Span]:
    """Every span of one record; :class:`EventDecodeError` when it is neither encoding."""
    if encoding == "otlp_json" or (encoding == "auto" and data.lstrip()[:1] == b"{"):
        return list(_json_spans(data))
    return list(_proto_spans(data))


# -- tool spans → action events ---------------------------------------------------------------


def _required(span: Span, name: str) -> str:
    value = span.attributes.get(name)
    if value is None or value == "":
        tool = span.attributes.get("gen_ai.tool.name", "?")
        message = (
            f"execute_tool span {span.span_id} (tool {tool}, trace {span.trace_id}) has no "
            f"{name}: cannot tell which loop it belongs to"
            if name == "gen_ai.conversation.id"
            else f"execute_tool span {span.span_id} (trace {span.trace_id}) has no {name}"
        )
        raise SpanError(message, (FieldError(f"attributes.{name}", "missing"),))
    return str(value)


def action_of(span: Span) -> ActionEvent:
    """The action event of a tool span; :class:`SpanError` when it lacks its loop or tool."""
    loop_id = _required(span, "gen_ai.conversation.id")
    tool = _required(span, "gen_ai.tool.name")
    attributes = span.attributes
    error_type = attributes.get("error.type")
    failed = span.status_code == STATUS_ERROR or error_type is not None
    payload: dict[str, Any] = {
        "params": canonical_args(attributes.get("gen_ai.tool.call.arguments")),
        "success": not failed,
    }
    if failed:
        payload["error_message"] = span.status_message or str(error_type or "error")
        status = attributes.get("http.response.status_code")
        if refused_type(None if error_type is None else str(error_type)) or refused_status(status):
            payload["rejected"] = True
    for field, name in (
        ("tool_call_id", "gen_ai.tool.call.id"),
        ("result", "gen_ai.tool.call.result"),
    ):
        if attributes.get(name) is not None:
            payload[field] = (
                result_text(attributes[name]) if field == "result" else str(attributes[name])
            )
    if span.end_ns >= span.start_ns > 0:
        payload["duration_ms"] = (span.end_ns - span.start_ns) / 1e6
    trace_context = None
    if len(span.trace_id) == 32 and len(span.span_id) == 16:
        trace_context = {"traceparent": f"00-{span.trace_id}-{span.span_id}-01"}
    event = make_action_event(
        loop_id,
        tool,
        event_id=derived_id("otlp", span.trace_id, span.span_id),
        occurred_at=span.start_ns / 1e9 if span.start_ns else None,
        **payload,
    )
    if trace_context is not None:
        event = event.model_copy(update={"trace_context": trace_context})
    return event
