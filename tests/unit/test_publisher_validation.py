"""Publishing validates at the edge, before anything reaches Kafka."""

import pytest

from loopwarden import AsyncPublisher, Publisher, PublishError
from loopwarden.errors import EventValidationError
from loopwarden.streams.client.publisher import encode_event, make_action_event


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
    from loopwarden.streams.client.memory_writes import chunk_records

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


def test_bulk_memory_writes_spread_by_memory_id_or_stay_together_by_scope():
    import orjson

    from loopwarden.schemas.memory import validate_memory_write
    from loopwarden.schemas.positions import default_partition
    from loopwarden.streams.client.memory_writes import make_memory_write, memory_records

    writes = [make_memory_write(f"fact {i}", event_id=f"e{i}") for i in range(40)]
    writes.append(make_memory_write("other scope", event_id="x", scope="team-b"))
    spread = memory_records(writes, [0, 1, 2, 3], "memory", per_record=200, max_bytes=1 << 20)
    assert {r.partition for r in spread} == {0, 1, 2, 3}  # one scope, every partition
    for record in spread:
        decoded = [validate_memory_write(w) for w in orjson.loads(record.value)]
        assert [w.event_id for w in decoded] == record.event_ids
        assert {w.payload.scope.encode() for w in decoded} == {record.key}
        for write in decoded:  # where Kafka's default partitioner puts its memory id
            assert default_partition(write.memory_id.encode(), 4) == record.partition
    sent = [e for r in spread for e in r.event_ids]
    assert sorted(sent) == sorted(w.event_id for w in writes)
    order = {w.event_id: i for i, w in enumerate(writes)}
    for record in spread:  # a record keeps the order its writes were given in
        assert [order[e] for e in record.event_ids] == sorted(order[e] for e in record.event_ids)
    by_scope = memory_records(writes, [0, 1, 2, 3], "scope", per_record=16, max_bytes=1 << 20)
    default = [r for r in by_scope if r.key == b"default"]
    assert {r.partition for r in default} == {default_partition(b"default", 4)}
    assert [len(r.event_ids) for r in default] == [16, 16, 8]
    assert [e for r in default for e in r.event_ids] == [f"e{i}" for i in range(40)]


def test_a_broker_on_loopback_is_a_development_broker():
    from loopwarden.streams.client.producer import on_loopback

    assert on_loopback("127.0.0.1:9092") and on_loopback("localhost:9092,[::1]:9093")
    assert not on_loopback("kafka.internal:9092")
    assert not on_loopback("127.0.0.1:9092,10.0.0.5:9092")
