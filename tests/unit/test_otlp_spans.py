"""OTLP tool spans → action events, in both encodings (payloads from opentelemetry-proto)."""

from __future__ import annotations

import pytest

from loopwarden.agents.otlp.spans import SpanError, action_of, decode_spans
from loopwarden.errors import EventDecodeError

from ..integration.otlp_payloads import otlp_json, otlp_proto, tool_span  # noqa: TID252

ENCODINGS = [("otlp_proto", otlp_proto), ("otlp_json", otlp_json)]


@pytest.mark.parametrize(("encoding", "encode"), ENCODINGS)
@pytest.mark.parametrize("declared", ["auto", "declared"])
def test_a_tool_span_becomes_an_action_event(encoding, encode, declared):
    span = tool_span("search", "conv-1", call_id="call_7", result='{"hits": 0}')
    (decoded,) = decode_spans(encode(span), encoding if declared == "declared" else "auto")
    event = action_of(decoded)
    assert event.loop_id == "conv-1"
    payload = event.payload
    assert payload.action_type == "search" and payload.params == {"q": "x"}
    assert payload.success is True and payload.tool_call_id == "call_7"
    assert payload.result == '{"hits": 0}' and payload.duration_ms == 2.5
    assert event.occurred_at == 1_767_225_600.0
    trace, span_id = span.trace_id.hex(), span.span_id.hex()
    assert event.trace_context == {"traceparent": f"00-{trace}-{span_id}-01"}
    again = action_of(decode_spans(encode(span))[0])
    assert again.event_id == event.event_id  # redelivered: the same id, deduplicated


@pytest.mark.parametrize(("encoding", "encode"), ENCODINGS)
def test_errors_and_other_spans(encoding, encode):
    failed = tool_span("shell", "c", error="exit 1")
    chat = tool_span(None, "c", operation="chat")
    spans = decode_spans(encode(failed, chat), encoding)
    assert [s.is_tool_call for s in spans] == [True, False]
    payload = action_of(spans[0]).payload
    assert payload.success is False and payload.error_message == "exit 1"


@pytest.mark.parametrize(("encoding", "encode"), ENCODINGS)
def test_a_tool_span_without_its_conversation_is_refused_with_the_reason(encoding, encode):
    (span,) = decode_spans(encode(tool_span("search", None)), encoding)
    with pytest.raises(SpanError, match=r"no gen_ai\.conversation\.id: cannot tell which loop"):
        action_of(span)
    (span,) = decode_spans(encode(tool_span(None, "c")), encoding)
    with pytest.raises(SpanError, match=r"no gen_ai\.tool\.name"):
        action_of(span)


def test_secrets_in_arguments_are_redacted():
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    span = tool_span("gh", "c", arguments=f'{{"token": "{token}"}}')
    event = action_of(decode_spans(otlp_proto(span))[0])
    assert token not in str(event.payload.params)


@pytest.mark.parametrize("data", [b"\xff\x00garbage", b'{"resourceSpans": 3}', b"{not json"])
def test_what_is_not_otlp_is_a_decode_error(data):
    with pytest.raises(EventDecodeError):
        decode_spans(data)
