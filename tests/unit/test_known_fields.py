"""The typed client refuses misspelled fields (issue 7); the wire format stays lenient."""

from __future__ import annotations

import pytest

from loopwarden.errors import EventValidationError
from loopwarden.schemas.events import validate_action
from loopwarden.streams.client.publisher import make_action_event


def test_a_misspelled_field_is_refused_with_a_suggestion():
    with pytest.raises(EventValidationError) as caught:
        make_action_event("loop-1", "shell", succes=False)
    assert [str(e) for e in caught.value.errors] == [
        "payload.succes: unknown field, did you mean 'success'?"
    ]


def test_known_fields_pass_and_the_wire_format_ignores_unknown_ones():
    event = make_action_event("loop-1", "shell", success=False, error_message="boom")
    assert event.payload.success is False
    wire = {"event_id": "e1", "loop_id": "l", "occurred_at": 1, "payload": {"action_type": "a"}}
    wire["payload"]["from_a_newer_producer"] = 1
    assert validate_action(wire).payload.action_type == "a"
