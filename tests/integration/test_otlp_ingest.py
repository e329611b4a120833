"""OTLP ingest end to end: Collector-style span records on the span topic, a real worker.

A traced agent that keeps calling the same tool is warned (the warning reaches it
through a subscriber: OTLP ingest is monitor-only); a tool span without a
conversation id and a record that is not OTLP go to the dead-letter topic.
"""

from __future__ import annotations

import uuid

import pytest

from loopwarden.streams.client.publisher import AsyncPublisher
from loopwarden.streams.client.subscriber import DeadLetterSubscriber, WarningSubscriber

from .adapter_harness import WARN_AT, laddered_settings
from .otlp_payloads import otlp_json, otlp_proto, tool_span

pytestmark = pytest.mark.integration


@pytest.fixture
def otlp_worker(broker, worker_factory):
    settings = laddered_settings(broker, "otlp")
    settings = settings.model_copy(update={"roles": frozenset({"monitor", "otlp"})})
    worker_factory(settings)
    return settings


@pytest.mark.parametrize("encode", [otlp_proto, otlp_json])
async def test_repeated_tool_spans_are_warned_and_bad_spans_dead_lettered(otlp_worker, encode):
    settings = otlp_worker
    conversation = f"conv-{uuid.uuid4().hex[:8]}"
    warnings = WarningSubscriber(settings, loop_id=conversation)
    letters = DeadLetterSubscriber(settings)
    spans = AsyncPublisher(settings, topic=settings.topics.otlp_spans)
    async with warnings, letters, spans:
        # one record of two spans (a chat span is skipped), then single-span records
        chat = tool_span(None, conversation, operation="chat")
        await spans.send_raw(encode(tool_span("grep", conversation, call_id="c0"), chat))
        for n in range(1, WARN_AT):
            await spans.send_raw(encode(tool_span("grep", conversation, call_id=f"c{n}")))
        await spans.send_raw(encode(tool_span("grep", None)))
        await spans.send_raw(b"\x0a\xff not a protobuf")

        (warning,) = await warnings.collect(1, timeout_s=60)
        found = await letters.collect(2, timeout_s=60)

    assert warning.action_type == "grep" and warning.step == "warn"
    assert len(warning.event_ids) == WARN_AT
    assert warning.trace_context["traceparent"].startswith("00-")
    reasons = sorted(letter.reason for letter in found)
    assert reasons == ["decode", "otlp_span"]
    missing = next(letter for letter in found if letter.reason == "otlp_span")
    assert "no gen_ai.conversation.id" in missing.message
