"""Publishing validates at the edge, before anything reaches Kafka."""

import pytest

from loopwarden import AsyncPublisher, Publisher, PublishError
from loopwarden.errors import EventValidationError
from loopwarden.streams.publisher import encode_event, make_action_event


async def test_async_publish_rejects_a_bad_field_with_its_path():
    publisher = AsyncPublisher()
    with pytest.raises(EventValidationError, match=r"payload\.action_type"):
        await publisher.publish("loop-1", "")
    with pytest.raises(EventValidationError, match=r"payload\.edit\.end_line"):
        await publisher.publish("loop-1", "edit", edit={"start_line": 3, "end_line": 0})


def test_sync_publisher_must_be_started():
    with pytest.raises(PublishError, match="not started"):
        Publisher().publish("loop-1", "shell")


def test_encoded_event_round_trips():
    event = make_action_event("loop-1", "shell", params={"cmd": "ls"}, occurred_at=5.0)
    import orjson

    data = orjson.loads(encode_event(event, published_at=6.0))
    assert data["payload"] == {
        "action_type": "shell",
        "params": {"cmd": "ls"},
        "success": True,
        "terminated": False,
        "simple": False,
        "resource_usage": {},
        "side_effects": [],
    }
    assert (data["occurred_at"], data["published_at"], data["type"]) == (5.0, 6.0, "action")
