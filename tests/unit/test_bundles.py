"""Record bundles (streams/runtime/bundles.py) and how the runner opens them, without a broker."""

from __future__ import annotations

from aiokafka.structs import ConsumerRecord, TopicPartition

from loopwarden.streams.runtime.bundles import bundle_fetched, bundle_records
from loopwarden.streams.runtime.records import Record


def consumed(offset: int, value: bytes, topic: str = "actions", partition: int = 3):
    return ConsumerRecord(
        topic=topic,
        partition=partition,
        offset=offset,
        timestamp=1_700_000_000_000 + offset,
        timestamp_type=0,
        key=b"loop-%d" % offset,
        value=value,
        checksum=None,
        serialized_key_size=6,
        serialized_value_size=len(value),
        headers=(("h", b"%d" % offset),),
    )


def test_a_fetched_run_becomes_bundles_standing_at_their_last_offset():
    records = [consumed(offset, b"v%d" % offset) for offset in range(10, 17)]
    bundles = bundle_records(records, max_records=3, max_bytes=1 << 20)
    assert [b.offset for b in bundles] == [12, 15, 16]
    assert [[r.offset for r in b.value] for b in bundles] == [[10, 11, 12], [13, 14, 15], [16]]
    assert [b.value.first_offset for b in bundles] == [10, 13, 16]
    assert bundles[0].timestamp == records[2].timestamp
    assert bundles[0].serialized_value_size == sum(len(r.value) for r in records[:3])
    assert all(b.key is None and b.headers == () for b in bundles)


def test_a_bundle_holds_at_most_max_bytes_of_values_but_always_one_record():
    records = [consumed(offset, b"x" * 400) for offset in range(5)]
    records.insert(2, consumed(99, b"y" * 5000))  # larger than a bundle on its own
    sizes = [len(b.value) for b in bundle_records(records, max_records=500, max_bytes=1000)]
    assert sizes == [2, 1, 2, 1]


def test_only_the_bundled_topics_are_bundled():
    actions, other = TopicPartition("actions", 0), TopicPartition("writes", 0)
    fetched = {
        actions: [consumed(o, b"a") for o in range(4)],
        other: [consumed(o, b"w", topic="writes", partition=0) for o in range(4)],
    }
    bundle_fetched(fetched, {"actions"}, max_records=500, max_bytes=1 << 20)
    assert len(fetched[actions]) == 1 and len(fetched[actions][0].value) == 4
    assert [r.value for r in fetched[other]] == [b"w"] * 4
    bundle_fetched(fetched, {"writes"}, max_records=1, max_bytes=1 << 20)  # 1: off
    assert [r.value for r in fetched[other]] == [b"w"] * 4


def test_a_bundle_opens_into_its_records_with_their_own_positions_and_headers():
    bundle = bundle_records([consumed(7, b"x"), consumed(8, b"y")], 10, 1 << 20)[0]
    records = Record.all_of(bundle)  # a consumer record has the message's fields
    assert [r.value for r in records] == [b"x", b"y"]
    assert [(r.source.partition, r.source.offset) for r in records] == [(3, 7), (3, 8)]
    assert records[1].source.timestamp_ms == 1_700_000_000_008
    assert records[0].key == b"loop-7" and records[0].headers == [("h", b"7")]


def test_a_bundle_read_by_two_agents_is_opened_once():
    bundle = bundle_records([consumed(7, b"x"), consumed(8, b"y")], 10, 1 << 20)[0]
    first, second = Record.all_of(bundle), Record.all_of(bundle)
    assert [r.value for r in second] == [b"x", b"y"]
    assert all(a is b for a, b in zip(first, second, strict=True))
