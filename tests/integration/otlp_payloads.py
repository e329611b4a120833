"""OTLP trace payloads built with the opentelemetry-proto package, in both encodings the
Collector's Kafka exporter writes (``otlp_proto``, ``otlp_json``)."""

from __future__ import annotations

import os
from typing import Any

import orjson
from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import (
    ResourceSpans,
    ScopeSpans,
    Span,
    Status,
    TracesData,
)


def _value(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    return AnyValue(string_value=str(value))


def tool_span(
    tool: str | None,
    conversation: str | None,
    *,
    arguments: str = '{"q": "x"}',
    result: str | None = "nothing",
    error: str | None = None,
    call_id: str | None = None,
    start_ns: int = 1_767_225_600_000_000_000,
    operation: str = "execute_tool",
    error_type: str = "ToolError",
    extra: dict | None = None,
) -> Span:
    """One span as a GenAI-instrumented agent emits it for a tool call."""
    attributes = {"gen_ai.operation.name": operation, "gen_ai.tool.call.arguments": arguments}
    for key, value in (
        ("gen_ai.tool.name", tool),
        ("gen_ai.conversation.id", conversation),
        ("gen_ai.tool.call.result", result),
        ("gen_ai.tool.call.id", call_id),
        ("error.type", error and error_type),
    ):
        if value is not None:
            attributes[key] = value
    attributes.update(extra or {})
    status = Status(code=Status.STATUS_CODE_ERROR, message=error) if error else Status()
    return Span(
        trace_id=os.urandom(16),
        span_id=os.urandom(8),
        name=f"{operation} {tool}" if tool else operation,
        start_time_unix_nano=start_ns,
        end_time_unix_nano=start_ns + 2_500_000,
        status=status,
        attributes=[KeyValue(key=k, value=_value(v)) for k, v in attributes.items()],
    )


def traces(*spans: Span) -> TracesData:
    return TracesData(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=spans)])])


def otlp_proto(*spans: Span) -> bytes:
    return traces(*spans).SerializeToString()


def otlp_json(*spans: Span) -> bytes:
    """OTLP/JSON: protobuf's JSON mapping with trace and span ids in hex (not base64)."""
    data = MessageToDict(traces(*spans))
    for resource_spans in data["resourceSpans"]:
        for scope_spans in resource_spans["scopeSpans"]:
            for span, message in zip(scope_spans["spans"], spans, strict=True):
                span["traceId"] = message.trace_id.hex()
                span["spanId"] = message.span_id.hex()
    return orjson.dumps(data)
