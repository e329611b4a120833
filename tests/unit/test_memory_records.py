"""Memory-writes records as the memory agent reads them (no broker)."""

from loopwarden.agents.memory.records import writes_of
from loopwarden.schemas import codec
from loopwarden.schemas.dead_letter import SourcePosition
from loopwarden.streams.runtime.records import Record


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


def test_arrow_records_are_checked_together_and_answered_record_by_record():
    import pyarrow as pa

    from loopwarden.agents.memory.records import inputs_of
    from loopwarden.schemas.memory_columns import to_ipc

    def arrow(rows, **extra):
        columns = {
            "event_id": [r[0] for r in rows],
            "occurred_at": [r[1] for r in rows],
            "content": [r[2] for r in rows],
            **extra,
        }
        return to_ipc(pa.table(columns))

    records = [
        record(arrow([("a1", 1.0, "ok"), ("a2", 2.0, "")]), partition=0, offset=4),
        record(codec.dumps(write("json", 0.5)), partition=1),
        record(arrow([("b1", 3.0, "token=abcdefgh12345678"), ("b2", -1.0, "x")]), partition=2),
        record(arrow([("c1", 4.0, "z")], tags=[["t"]]), partition=3, offset=9),  # other schema
        record(b"\xff\xff\xff\xffnot arrow", partition=3, offset=10),
    ]
    inputs = inputs_of(records)
    assert [w.event_id for w in inputs.writes] == ["json"]
    assert [b.table.column("event_id").to_pylist() for b in inputs.columns] == [
        ["a1"],
        ["b1"],
        ["c1"],
    ]
    assert all(b.redacted for b in inputs.columns)
    assert inputs.columns[1].table.column("content").to_pylist() == ["token=[REDACTED]"]
    assert inputs.columns[1].had_secrets.tolist() == [True]
    letters = [
        (d.source.partition, d.source.offset, d.batch_index, d.reason) for d in inputs.dead_letters
    ]
    assert letters == [
        (3, 10, None, "decode"),
        (0, 4, 1, "validation"),
        (2, 0, 1, "validation"),
    ]
