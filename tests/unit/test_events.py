"""The event contract at the edge."""

import pytest

from loopwarden.errors import EventValidationError
from loopwarden.schemas.events import validate_action


def envelope(**changes):
    base = {"event_id": "e", "loop_id": "L", "occurred_at": 1.5, "payload": {"action_type": "a"}}
    base.update(changes)
    return base


def test_iso_timestamps_with_a_zone_are_epoch_seconds():
    event = validate_action(envelope(occurred_at="2026-01-01T00:00:00Z"))
    assert event.occurred_at == 1767225600.0


def test_naive_iso_timestamp_is_rejected():
    with pytest.raises(EventValidationError, match="needs a timezone"):
        validate_action(envelope(occurred_at="2026-01-01T00:00:00"))


@pytest.mark.parametrize("millis", [1_767_225_600_250, 1_767_225_600_250.5])
def test_a_millisecond_timestamp_is_refused_by_name(millis):
    """JavaScript's Date.now() and Java's currentTimeMillis read as seconds would be
    thousands of years ahead: the error says what they are and what to send."""
    with pytest.raises(EventValidationError) as info:
        validate_action(envelope(occurred_at=millis))
    assert info.value.errors[0].path == "occurred_at"
    assert "looks like milliseconds since the epoch" in str(info.value)
    assert "Date.now() / 1000" in str(info.value)
    assert validate_action(envelope(occurred_at=millis / 1000)).occurred_at == millis / 1000


def test_the_exported_timestamp_schema_uses_json_schema_keywords():
    """The schema other languages generate from says number (epoch seconds) or ISO-8601,
    with minimum/maximum, not pydantic's own ge/le."""
    from loopwarden.schemas.events import ActionEvent

    occurred_at = ActionEvent.model_json_schema()["properties"]["occurred_at"]
    number, text = occurred_at["anyOf"]
    assert number == {"type": "number", "minimum": 0, "maximum": 253_402_300_799.0}
    assert text == {"type": "string", "format": "date-time"}
    assert "milliseconds" in occurred_at["description"]


def test_future_schema_version_is_a_clear_error():
    with pytest.raises(EventValidationError) as info:
        validate_action(envelope(schema_version=2))
    assert info.value.errors[0].path == "schema_version"
    assert "unsupported version 2" in str(info.value)


def test_wrong_type_is_rejected():
    with pytest.raises(EventValidationError, match="type: Input should be 'action'"):
        validate_action(envelope(type="memory_write"))


def test_edit_range_must_be_ordered():
    with pytest.raises(EventValidationError, match=r"payload\.edit: Value error, end_line"):
        validate_action(
            envelope(payload={"action_type": "a", "edit": {"start_line": 9, "end_line": 3}})
        )


def test_unknown_fields_are_ignored_for_forward_compatibility():
    event = validate_action(envelope(new_field=1, payload={"action_type": "a", "future": True}))
    assert event.payload.action_type == "a"


def test_bad_reflection_level_names_the_choices():
    with pytest.raises(EventValidationError, match=r"payload\.reflection_level"):
        validate_action(envelope(payload={"action_type": "a", "reflection_level": "huge"}))


def _action(**payload):
    return {
        "event_id": "e",
        "loop_id": "l",
        "occurred_at": 1,
        "payload": {"action_type": "a", **payload},
    }


@pytest.mark.parametrize(
    ("payload", "path"),
    [
        ({"iteration": 2**64}, "payload.iteration"),
        ({"params": {"n": 2**70}}, "payload.params"),
        (
            {
                "resource_usage": {
                    "deep": __import__("functools").reduce(lambda v, _: {"x": v}, range(40), 1)
                }
            },
            "payload.resource_usage",
        ),
        ({"duration_ms": float("nan")}, "payload.duration_ms"),
        ({"spin_threshold": 2**63}, "payload.spin_threshold"),
    ],
)
def test_poison_values_are_field_errors(payload, path):
    """Issue 15.9: values that crashed an agent later (orjson's 64-bit and depth limits)."""
    with pytest.raises(EventValidationError) as error:
        validate_action(_action(**payload))
    assert error.value.errors[0].path == path


def test_hostile_ids_are_field_errors():
    bad = dict(_action(), loop_id="a\x00b")
    with pytest.raises(EventValidationError) as error:
        validate_action(bad)
    assert error.value.errors[0].path == "loop_id"
