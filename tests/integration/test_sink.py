"""The worker's output sink: batches per partition, in order, flushed on demand."""

from __future__ import annotations

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from loopwarden.streams.publisher import default_partition
from loopwarden.streams.sink import RecordSink

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
        bootstrap_servers=broker.bootstrap_servers, fetch_max_wait_ms=5, enable_auto_commit=False
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
