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


def test_bulk_memory_records_respect_both_limits_and_keep_order():
    from loopwarden.streams.memory_writes import chunk_records

    items = [(f"e{i}", b"x" * size) for i, size in enumerate([10, 10, 10, 50, 10, 200, 10])]
    chunks = list(chunk_records(items, per_record=2, max_bytes=60))
    assert [[e for e, _ in c] for c in chunks] == [
        ["e0", "e1"],
        ["e2"],  # e3 would pass 60 bytes
        ["e3"],  # e4 too
        ["e4"],
        ["e5"],  # larger than the limit: alone
        ["e6"],
    ]
    assert [e for c in chunks for e, _ in c] == [e for e, _ in items]
