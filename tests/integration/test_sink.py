"""The worker's output sink: batches per partition, in order, flushed on demand."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from loopwarden.streams.client.publisher import default_partition
from loopwarden.streams.runtime.sink import RecordSink

from .conftest import create_topics, isolated_settings

pytestmark = pytest.mark.integration


async def test_records_arrive_in_order_on_their_key_partition(broker):
    settings = isolated_settings(broker, "sink")
    create_topics(settings)
    topic = settings.topics.warnings
    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers, max_batch_size=4096)
    await producer.start()
    try:
        sink = RecordSink(lambda: producer, linger_s=0.001, max_buffer_bytes=10_000)
        sent = []
        for i in range(2000):
            key = f"k{i % 7}".encode()
            value = f"{i:06d}".encode() * 10
            sink.add(topic, key, value, headers=[("n", str(i).encode())])
            sent.append((key, value))
            if sink.full:
                await sink.flush()
        sink.add(topic, None, b"explicit", partition=2)
        await sink.flush()
        assert sink.buffered_bytes == 0 and sink.sent == 2001
    finally:
        await producer.stop()

    consumer = AIOKafkaConsumer(
        bootstrap_servers=broker.bootstrap_servers,
        fetch_max_wait_ms=5,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    await consumer.start()
    try:
        tps = [TopicPartition(topic, p) for p in range(4)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        received = []
        for _ in range(50):
            batches = await consumer.getmany(timeout_ms=100)
            for tp, records in batches.items():
                received.extend((tp.partition, r.key, r.value, dict(r.headers)) for r in records)
            if len(received) >= 2001:
                break
    finally:
        await consumer.stop()
    assert (2, None, b"explicit", {}) in received
    for key in {k for k, _ in sent}:
        mine = [r for r in received if r[1] == key]
        assert {r[0] for r in mine} == {default_partition(key, 4)}
        assert [r[2] for r in mine] == [v for k, v in sent if k == key]
        assert mine[0][3]["n"] == str(sent.index((key, mine[0][2]))).encode()


async def test_a_failed_background_delivery_is_not_flushed_past(tmp_path):
    """Issue 15.3: a background flush that fails must make the next flush fail (so Faust
    does not commit), and the undelivered records are kept and delivered once it can."""
    from loopwarden.errors import PublishError
    from loopwarden.streams.tools.broker import EmbeddedBroker

    first = EmbeddedBroker(log_path=tmp_path / "first.log").start()
    settings = isolated_settings(first, "sink-fail")
    create_topics(settings)
    topic = settings.topics.warnings
    producer = AIOKafkaProducer(
        bootstrap_servers=first.bootstrap_servers, request_timeout_ms=1500, retry_backoff_ms=50
    )
    await producer.start()
    second = None
    try:
        sink = RecordSink(lambda: producer, linger_s=0.001)
        await sink.flush()  # nothing buffered: fine
        await producer.partitions_for(topic)
        first.stop()  # the broker goes away: the linger-triggered background flush fails
        for i in range(10):
            sink.add(topic, b"k", f"r{i}".encode())
        await sink.idle()
        assert sink.delivery_error is not None
        with pytest.raises(PublishError):
            await sink.flush()
        assert sink.pending_records == 10  # kept, not dropped

        second = EmbeddedBroker(port=first.port, log_path=tmp_path / "second.log").start()
        create_topics(settings)  # a memory broker comes back empty
        sink.add(topic, b"k", b"r10")
        await sink.flush()
        assert sink.delivery_error is None and sink.pending_records == 0
        values = await _read(second.bootstrap_servers, topic, b"k", 11)
    finally:
        await producer.stop()
        if second is not None:
            second.stop()
    assert values == [f"r{i}".encode() for i in range(11)]  # all of them, in order


async def _read(bootstrap: str, topic: str, key: bytes, count: int) -> list[bytes]:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        fetch_max_wait_ms=5,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    await consumer.start()
    try:
        partition = TopicPartition(topic, default_partition(key, 4))
        consumer.assign([partition])
        await consumer.seek_to_beginning(partition)
        values: list[bytes] = []
        while len(values) < count:
            batch = await consumer.getmany(partition, timeout_ms=5000)
            assert batch, f"only {values} arrived"
            values.extend(r.value for r in batch[partition])
        return values
    finally:
        await consumer.stop()


async def test_state_records_wait_until_the_outputs_are_delivered(broker):
    """Issue 15.8 (outputs lost under kill -9): a changelog record landed while the
    warnings of the same event did not; the next worker's restored state skipped the
    event as a replay and its warnings were never sent. State now goes last."""
    from faultsuite.harness import read_topic

    from loopwarden.errors import PublishError

    settings = isolated_settings(broker, "sink-order")
    create_topics(settings)
    state, output = settings.topics.dead_letter, settings.topics.warnings
    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers)
    await producer.start()
    try:
        sink = RecordSink(lambda: producer, linger_s=60)
        sink.deliver_last(state)
        sink.add(state, b"loop", b"state after event 1", partition=0)  # added first
        sink.add(output, b"loop", b"warning of event 1", partition=99)  # cannot be delivered
        with pytest.raises(PublishError):
            await sink.flush()
        assert sink.pending_records == 2  # both kept for the next flush

        sink = RecordSink(lambda: producer, linger_s=60)
        sink.deliver_last(state)
        sink.add(state, b"loop", b"state after event 2", partition=0)
        sink.add(output, b"loop", b"warning of event 2", partition=0)
        await sink.flush()
    finally:
        await producer.stop()
    bootstrap = broker.bootstrap_servers
    assert [v for _, v, _ in await read_topic(bootstrap, state)] == [b"state after event 2"]
    assert [v for _, v, _ in await read_topic(bootstrap, output)] == [b"warning of event 2"]


async def test_a_commit_flush_waits_for_one_background_flush_not_a_queue_of_them(broker):
    """Records keep coming while a flush waits for the broker: background flushes used to
    start every ``linger_s`` and queue on the lock, and a commit's flush waited behind
    all of them (2 s at 1,000 events/s)."""
    settings = isolated_settings(broker, "sink-queue")
    create_topics(settings)
    topic = settings.topics.warnings
    # a linger makes every delivery take 20 ms, as a slower broker would
    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers, linger_ms=20)
    await producer.start()
    sink = RecordSink(lambda: producer, linger_s=0.001)
    added = 0

    async def keep_adding() -> None:
        nonlocal added
        while True:
            sink.add(topic, b"k", b"v%d" % added)
            added += 1
            await asyncio.sleep(0.001)

    adding = asyncio.create_task(keep_adding())
    try:
        await asyncio.sleep(0.4)
        before = sink.flushes
        await sink.flush()
        rounds = sink.flushes - before
    finally:
        adding.cancel()
        await sink.flush()
        await producer.stop()
    assert rounds <= 2, rounds  # the background flush under way, then this one
    assert sink.sent == added


async def test_a_flush_is_not_held_for_the_producers_linger(broker):
    """The sink lingers itself; a batch it hands over is sent at once, not after the
    producer's ``linger_ms`` (an open batch waited for ``send()`` calls to fill it)."""
    settings = isolated_settings(broker, "sink-linger")
    create_topics(settings)
    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers, linger_ms=30_000)
    await producer.start()
    try:
        sink = RecordSink(lambda: producer, linger_s=0.001)
        for i in range(20):
            sink.add(settings.topics.warnings, f"k{i}".encode(), b"warning")
        await asyncio.wait_for(sink.flush(), timeout=15)  # half the producer's linger
        assert sink.sent == 20
    finally:
        await producer.stop()
