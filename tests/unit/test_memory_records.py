"""Memory-writes records as the memory agent reads them (no broker)."""

from loopwarden.agents.memory.records import writes_of
from loopwarden.schemas import codec
from loopwarden.schemas.dead_letter import SourcePosition
from loopwarden.streams.runner import Record


def record(value, partition, offset=0):
    return Record(value, b"default", [], SourcePosition("memory-writes", partition, offset, None))


def write(event_id, at, **payload):
    return {"event_id": event_id, "occurred_at": at, "payload": {"content": event_id, **payload}}


def test_writes_come_in_event_time_order_whatever_partition_came_first():
    records = [
        record(codec.dumps([write("b-later", 20.0), write("c-last", 30.0)]), partition=0),
        record(codec.dumps(write("a-first", 10.0)), partition=3),
        record(codec.dumps(write("a-tie", 10.0)), partition=1),  # a tie keeps arrival order
    ]
    writes, letters = writes_of(records)
    assert [w.event_id for w in writes] == ["a-first", "a-tie", "b-later", "c-last"]
    assert letters == []


def test_a_bad_write_in_an_array_is_one_dead_letter_and_the_rest_apply():
    value = codec.dumps([write("ok", 1.0), write("bad", 2.0, embedding="not base64!"), 42])
    writes, letters = writes_of([record(value, partition=2, offset=7)])
    assert [w.event_id for w in writes] == ["ok"]
    assert [(d.batch_index, d.source.partition, d.source.offset) for d in letters] == [
        (1, 2, 7),
        (2, 2, 7),
    ]
    assert "base64" in letters[0].message
