"""The publisher delivers every event once, in order per loop, on the loop's partition."""

from __future__ import annotations

import asyncio
import random

import orjson
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from loopwarden.streams.client.publisher import AsyncPublisher, default_partition, make_action_event

from .conftest import create_topics, isolated_settings

pytestmark = pytest.mark.integration


async def read_all(settings, expected: int) -> list[tuple[int, dict]]:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=settings.kafka.bootstrap_servers,
        enable_auto_commit=False,
        fetch_max_wait_ms=5,
        auto_offset_reset="earliest",  # the seek below races a 'latest' reset otherwise
    )
    await consumer.start()
    try:
        tps = [
            TopicPartition(settings.topics.actions, p) for p in range(settings.topics.partitions)
        ]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        events: list[tuple[int, dict]] = []
        idle = 0
        while len(events) < expected and idle < 20:
            batches = await consumer.getmany(timeout_ms=200, max_records=10000)
            idle = 0 if batches else idle + 1
            for tp, records in sorted(batches.items(), key=lambda kv: kv[0].partition):
                for record in records:
                    value = orjson.loads(record.value)
                    for event in value if isinstance(value, list) else [value]:
                        events.append((tp.partition, event))
        return events
    finally:
        await consumer.stop()


@pytest.mark.parametrize("batching", [True, False])
async def test_every_event_arrives_once_in_order_on_its_partition(broker, batching):
    settings = isolated_settings(broker, f"publisher-{batching}")
    create_topics(settings)
    rng = random.Random(7)
    loops = [f"loop-{i}" for i in range(1000)]
    sent: dict[str, list[str]] = {loop: [] for loop in loops}
    events = []
    for _ in range(30000 if batching else 3000):
        loop_id = rng.choice(loops)
        events.append(make_action_event(loop_id, rng.choice("abc")))
        sent[loop_id].append(events[-1].event_id)
    async with AsyncPublisher(settings, batching=batching) as publisher:
        for i, event in enumerate(events):  # a burst: aiokafka's batches fill up and wait
            publisher.publish_event(event)
            if i % 5000 == 4999:
                await asyncio.sleep(0)  # let the linger timers and sends run mid-burst
    total = sum(len(ids) for ids in sent.values())
    received = await read_all(settings, total)
    got: dict[str, list[str]] = {loop: [] for loop in loops}
    for partition, event in received:
        assert partition == default_partition(event["loop_id"].encode(), 4)
        got[event["loop_id"]].append(event["event_id"])
    assert got == sent


async def test_a_subscriber_left_mid_batch_hands_the_rest_to_the_next_loop(broker):
    """Leaving an ``async for`` over a subscriber (a break, ``collect`` reaching its
    count) keeps what it had fetched and not handed out: the next ``async for`` on the
    same subscriber starts with it."""
    from loopwarden.streams.client.subscriber import TopicSubscriber

    settings = isolated_settings(broker, "subscriber-resume")
    create_topics(settings)
    loop_id = "resume-1"
    async with AsyncPublisher(settings) as publisher:
        for n in range(6):  # six records on one partition, fetched in one batch
            publisher.publish_event(make_action_event(loop_id, "step", params={"n": n}))
            await publisher.flush()
    subscriber = TopicSubscriber(
        settings.topics.actions,
        lambda r: orjson.loads(r.value),
        settings,
        loop_id=loop_id,
        from_beginning=True,
    )

    def numbers(values) -> list[int]:
        return [
            e["payload"]["params"]["n"] for v in values for e in (v if isinstance(v, list) else [v])
        ]

    async with subscriber:
        first = await subscriber.collect(1, timeout_s=30)
        rest = await subscriber.collect(6, timeout_s=3)
    assert numbers(first + rest) == list(range(6))


async def test_an_idle_subscriber_polls_at_the_idle_wait_and_still_gets_the_next_record(broker):
    """A client subscriber's fetch wait grows to ``kafka.idle_fetch_max_wait_ms`` while the
    topic is quiet (an idle agent fetched 100 times a second at 10 ms), and the next
    record still arrives and brings the wait back down."""
    from loopwarden.streams.client.subscriber import TopicSubscriber

    settings = isolated_settings(broker, "subscriber-idle")
    create_topics(settings)
    kafka = settings.kafka
    loop_id = "idle-1"
    subscriber = TopicSubscriber(
        settings.topics.actions, lambda r: orjson.loads(r.value), settings, loop_id=loop_id
    )
    async with subscriber:
        fetcher = subscriber._consumer._fetcher  # type: ignore[union-attr]
        waits: list[int] = []  # the wait set after each fetch, in order
        process = fetcher._proc_fetch_request

        async def noted(*args: object) -> bool:
            got = await process(*args)
            waits.append(fetcher._fetch_max_wait_ms)
            return got

        fetcher._proc_fetch_request = noted
        for _ in range(200):  # quiet: it grows (within a second; ten at most)
            if waits and waits[-1] >= kafka.idle_fetch_max_wait_ms:
                break
            await subscriber.collect(1, timeout_s=0.05)
        assert waits[-1] == kafka.idle_fetch_max_wait_ms, waits
        assert waits == sorted(waits) and waits[0] > kafka.fetch_max_wait_ms
        quiet = len(waits)
        async with AsyncPublisher(settings) as publisher:
            publisher.publish_event(make_action_event(loop_id, "step"))
            await publisher.flush()
        (received,) = await subscriber.collect(1, timeout_s=30)
        assert received["loop_id"] == loop_id
        assert kafka.fetch_max_wait_ms in waits[quiet:]  # the fetch that brought it


async def test_a_subscriber_waits_for_records_in_long_turns_and_a_stop_ends_the_wait(broker):
    """An idle subscriber's loop and aiokafka's fetch routine turn seldom
    (``GETMANY_TIMEOUT_MS``, ``ROUTINE_TIMEOUT_MS``): records or a stop end the wait at
    once, so the long turns cost no latency and no slow shutdown."""
    from loopwarden.streams.client.fetch_wait import GETMANY_TIMEOUT_MS, ROUTINE_TIMEOUT_MS
    from loopwarden.streams.client.subscriber import TopicSubscriber

    settings = isolated_settings(broker, "subscriber-turns")
    create_topics(settings)
    subscriber = TopicSubscriber(
        settings.topics.actions, lambda r: orjson.loads(r.value), settings, loop_id="turns-1"
    )
    await subscriber.start()
    consumer = subscriber._consumer
    assert consumer is not None
    assert consumer._fetcher._fetcher_timeout == ROUTINE_TIMEOUT_MS / 1000
    waiting = asyncio.Event()
    getmany = consumer.getmany

    async def noted(*args: object, **kwargs: object) -> object:
        waiting.set()
        return await getmany(*args, **kwargs)

    consumer.getmany = noted  # type: ignore[method-assign]
    reading = asyncio.ensure_future(anext(aiter(subscriber), None))
    await asyncio.wait_for(waiting.wait(), 30)
    started = asyncio.get_running_loop().time()
    await subscriber.stop()
    assert await asyncio.wait_for(reading, 30) is None  # the iteration ended, empty
    assert asyncio.get_running_loop().time() - started < GETMANY_TIMEOUT_MS / 1000 / 2
