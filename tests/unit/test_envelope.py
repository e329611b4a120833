"""One envelope for every input: identity, loop, time and trace context around each
input's own ``type`` and ``payload``."""

from __future__ import annotations

import pytest

from loopwarden.schemas.completions import GuardrailOverride, LoopCompletion, ReflectionCached
from loopwarden.schemas.events import ENVELOPE_FIELDS, ActionEvent, Envelope, validate_action
from loopwarden.schemas.flat_events import envelope_from_json
from loopwarden.schemas.tasks import TaskEnd, TaskStart, validate_task_event

INPUTS = (ActionEvent, LoopCompletion, GuardrailOverride, ReflectionCached, TaskStart, TaskEnd)
TRACE = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}


@pytest.mark.parametrize("model", INPUTS, ids=lambda m: m.__name__)
def test_every_input_is_the_envelope_plus_its_type_and_payload(model):
    assert issubclass(model, Envelope)
    assert set(model.model_fields) == ENVELOPE_FIELDS


def test_a_task_event_keeps_the_publish_time_and_trace_context_an_action_keeps():
    common = {"event_id": "e1", "loop_id": "l1", "occurred_at": 10.0, "published_at": 10.5}
    task = validate_task_event(
        {
            **common,
            "type": "task_start",
            "trace_context": TRACE,
            "payload": {"task_description": "x"},
        }
    )
    action = validate_action({**common, "trace_context": TRACE, "payload": {"action_type": "a"}})
    assert (task.published_at, task.trace_context) == (action.published_at, action.trace_context)


def test_a_flat_line_lifts_every_envelope_key_out_of_the_payload():
    line = {
        "loop_id": "l1",
        "action_type": "search",
        "published_at": 12.5,
        "trace_context": TRACE,
        "schema_version": 1,
    }
    event = validate_action(envelope_from_json(line, line_no=3))
    assert (event.event_id, event.published_at, event.trace_context) == ("line-3", 12.5, TRACE)
    assert event.payload.action_type == "search"
