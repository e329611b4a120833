"""Contract tests on the real broker: each workaround still does its job (see
``loopwarden.streams.runtime.workarounds``; the wiring is asserted in the unit tests)."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from loopwarden.streams.client.offsets import probe_end_offsets
from loopwarden.streams.client.publisher import AsyncPublisher
from loopwarden.worker import build_worker_app

from .conftest import create_topics, isolated_settings
from .inprocess import running_app

pytestmark = pytest.mark.integration


async def test_the_worker_consumer_fetches_with_the_configured_wait(broker):
    settings = isolated_settings(broker, "fetch-wait")
    kafka = settings.kafka.model_copy(update={"fetch_min_bytes": 4096})
    app = build_worker_app(settings.model_copy(update={"kafka": kafka}))
    thread = app.consumer._thread
    consumer = thread._create_worker_consumer(app.transport)
    assert consumer._fetch_max_wait_ms == settings.kafka.fetch_max_wait_ms
    await consumer.start()
    try:
        # ours (10 ms, 50 on Apache Kafka: infra/worker-kafka.env), not Faust's hard-coded 1500
        assert consumer._fetcher._fetch_max_wait_ms == settings.kafka.fetch_max_wait_ms < 1500
        assert consumer._fetcher._fetch_min_bytes == 4096  # Faust passes none (aiokafka's 1)
    finally:
        await consumer.stop()


async def test_the_probe_finds_the_end_of_a_batched_partition(broker):
    settings = isolated_settings(broker, "probe")
    create_topics(settings)
    topic = settings.topics.warnings
    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers)
    await producer.start()
    try:
        batch = producer.create_batch()
        for i in range(5):
            batch.append(key=None, value=f"r{i}".encode(), timestamp=None)
        await (await producer.send_batch(batch, topic, partition=1))
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap_servers)
    await consumer.start()
    try:
        tp = TopicPartition(topic, 1)
        reported = await consumer.end_offsets([tp])
    finally:
        await consumer.stop()
    probed = await probe_end_offsets(broker.bootstrap_servers, reported)
    assert probed[tp] == 5, (reported, probed)


async def test_the_probe_is_not_fooled_by_a_slow_broker(tmp_path):
    """Issue 15.8: the probe gave up after one empty 100 ms poll; a broker answering a
    fetch in 300 ms (Tansu under load) made recovery stop short and state go backwards."""
    from faultsuite.proxy import BrokerProxy

    from loopwarden.streams.tools.broker import EmbeddedBroker, free_port

    proxy_port = free_port()
    with EmbeddedBroker(log_path=tmp_path / "b.log", advertised_port=proxy_port) as slow:
        proxy = BrokerProxy(proxy_port, slow.port).start()
        try:
            bootstrap = f"127.0.0.1:{proxy_port}"
            settings = isolated_settings(slow, "slow-probe").namespaced(
                "x", bootstrap_servers=bootstrap
            )
            create_topics(settings)
            topic = settings.topics.warnings
            producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
            await producer.start()
            try:
                batch = producer.create_batch()
                for i in range(7):
                    batch.append(key=None, value=f"r{i}".encode(), timestamp=None)
                await (await producer.send_batch(batch, topic, partition=0))
            finally:
                await producer.stop()
            tp = TopicPartition(topic, 0)
            consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
            await consumer.start()
            try:
                reported = await consumer.end_offsets([tp])
            finally:
                await consumer.stop()
            proxy.delay_s = 0.3
            probed = await probe_end_offsets(bootstrap, reported)
        finally:
            proxy.stop()
    assert probed[tp] == 7, (reported, probed)


async def _actions_with_records(broker, settings, count: int) -> TopicPartition:
    """The settings' topics created, and ``count`` records on partition 0 of actions."""
    create_topics(settings)
    tp = TopicPartition(settings.topics.actions, 0)
    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers)
    await producer.start()
    try:
        for i in range(count):
            await producer.send_and_wait(tp.topic, f"r{i}".encode(), partition=0)
    finally:
        await producer.stop()
    return tp


async def test_records_fetched_before_a_seek_or_a_reassignment_are_stale(broker):
    """Issue 15.8: Faust yielded a batch fetched before a rebalance after the rewind to
    the committed offsets; its records overtook the rewound ones (dropped as already
    read: the commit stalled, or loop states skipped events and went backwards)."""
    settings = isolated_settings(broker, "stale-fetch")
    tp = await _actions_with_records(broker, settings, 10)
    app = build_worker_app(settings)
    faust_consumer = app.consumer
    consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap_servers, fetch_max_wait_ms=10)
    await consumer.start()
    try:
        consumer.assign([tp])
        consumer.seek(tp, 0)

        async def fetch() -> None:
            batch = await faust_consumer._thread._fetch_records(consumer, {tp}, timeout=10)
            assert [r.offset for r in batch[tp]][:1] == [0]
            faust_consumer._positions = batch.positions

        await fetch()
        assert faust_consumer._still_at_fetched_position(tp)
        consumer.seek(tp, 0)  # a rewind: what Faust does after every rebalance
        assert not faust_consumer._still_at_fetched_position(tp)

        await fetch()
        assert faust_consumer._still_at_fetched_position(tp)
        consumer.assign([tp])  # a new assignment of the same partition
        assert not faust_consumer._still_at_fetched_position(tp)
    finally:
        await consumer.stop()


async def test_an_empty_set_of_active_partitions_fetches_nothing(broker):
    """Faust hands its live set of active partitions to the consumer thread and empties
    it while pausing every partition in a rebalance; aiokafka reads an empty set as
    "every partition". The fetch then returned the paused input partitions' records up
    to the end of the log, Faust dropped them, and their positions stayed there: after
    the rebalance the worker read the newest records first and the loop states skipped
    the older ones as replays (the crash scenario lost 7 to 737 warnings a run)."""
    settings = isolated_settings(broker, "empty-active")
    tp = await _actions_with_records(broker, settings, 5)
    thread = build_worker_app(settings).consumer._thread
    consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap_servers, fetch_max_wait_ms=10)
    await consumer.start()
    try:
        consumer.assign([tp])
        consumer.seek(tp, 0)
        drained = await consumer._fetcher.fetched_records(set(), timeout=10)
        assert [r.offset for r in drained[tp]] == [0, 1, 2, 3, 4]  # aiokafka: all of them
        consumer.seek(tp, 0)
        assert await thread._fetch_records(consumer, set(), timeout=1) == {}
        assert await consumer.position(tp) == 0  # nothing consumed behind Faust's back
        batch = await thread._fetch_records(consumer, {tp}, timeout=10)
        assert [r.offset for r in batch[tp]][:1] == [0]
    finally:
        await consumer.stop()


async def test_the_fetch_wait_grows_while_idle_and_drops_when_records_arrive(broker):
    settings = isolated_settings(broker, "fetch-follows").model_copy(
        update={"roles": frozenset({"monitor"})}
    )
    async with running_app(settings) as app:
        fetcher = app.consumer._thread._consumer._fetcher
        kafka = settings.kafka

        async def until(wait_ms: int) -> None:
            deadline = asyncio.get_running_loop().time() + 30
            while fetcher._fetch_max_wait_ms != wait_ms:
                assert asyncio.get_running_loop().time() < deadline, fetcher._fetch_max_wait_ms
                await asyncio.sleep(0.01)

        await until(kafka.idle_fetch_max_wait_ms)  # nothing to read: 10 → 20 → … → 500
        async with AsyncPublisher(settings) as publisher:
            await publisher.publish("fetch-follows", "probe")
        await until(kafka.fetch_max_wait_ms)  # a fetch brought a record back
