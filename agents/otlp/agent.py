"""The ``ingest_otlp_spans`` agent: tool spans from the collector's topic → the actions topic.

Role ``otlp`` (off by default). Reads ``topics.otlp_spans`` — where the OpenTelemetry
Collector's Kafka exporter writes spans — and publishes each ``execute_tool`` span as
an action event keyed by its conversation id, so the monitor (on any worker) sees it
in its loop's partition like any other event. A record that is not OTLP trace data,
and a tool span without a conversation id or tool name, go to the dead-letter topic
with the reason; the other spans of the record are still ingested.

Monitor-only: the warnings reach an agent through an adapter or a subscriber.
"""

from __future__ import annotations

from typing import Any

from loopwarden.agents.otlp.spans import SpanError, action_of, decode_spans
from loopwarden.errors import EventError
from loopwarden.schemas.dead_letter import DeadLetter
from loopwarden.streams.client.event_builder import encode_event
from loopwarden.streams.runtime.app import LoopwardenApp
from loopwarden.streams.runtime.capability import Capability
from loopwarden.streams.runtime.capability_runner import run_capability
from loopwarden.streams.runtime.records import Record
from loopwarden.streams.runtime.resources import WorkerResources


def register_otlp_ingest(
    app: LoopwardenApp, resources: WorkerResources, capability: Capability
) -> Any:
    """Declare the ``ingest_otlp_spans`` agent on ``app``."""
    encoding = app.loopwarden.ingest.otlp_encoding

    def handle(record: Record) -> int:
        value = record.value or b""
        try:
            spans = decode_spans(value, encoding)
        except EventError as exc:
            app.dead_letters.send(DeadLetter.from_error(exc, value, record.source, record.key))
            return 0
        published = 0
        for index, span in enumerate(spans):
            if not span.is_tool_call:
                continue
            try:
                event = action_of(span)
            except (SpanError, EventError) as exc:
                letter = DeadLetter.from_error(exc, value, record.source, record.key, index)
                app.dead_letters.send(letter)
                continue
            app.outputs.emit("actions", event, encoded=encode_event(event))
            published += 1
        return published

    return run_capability(app, capability, handle)
