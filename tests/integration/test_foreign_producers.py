"""Issue 15.2: one loop's events from producers that partition differently are all applied.

A librdkafka producer (confluent-kafka, default ``consistent_random``: CRC32 of the
key), records without a key and the Python publisher (murmur2) put one loop's
events on different partitions. Every event must be applied exactly once to the
loop's one state: nothing dropped as a "replay", nothing counted twice.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from confluent_kafka import Producer

from loopwarden.schemas import codec
from loopwarden.schemas.ids import new_event_id
from loopwarden.schemas.positions import default_partition
from loopwarden.streams.client.publisher import AsyncPublisher

from .conftest import LayerOneWarnings

pytestmark = pytest.mark.integration

LOOPS = 6


def _event(loop_id: str, action_type: str, at: float) -> bytes:
    return codec.dumps(
        {
            "event_id": new_event_id(),
            "loop_id": loop_id,
            "occurred_at": at,
            "payload": {"action_type": action_type},
        }
    )


def _librdkafka_send(bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes]]) -> list:
    """Send with librdkafka's defaults; return the partitions the records landed on."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    landed: list[int] = []

    def delivered(err, message) -> None:
        assert err is None, err
        landed.append(message.partition())

    for key, value in records:
        producer.produce(topic, value=value, key=key, on_delivery=delivered)
        producer.flush(30)  # one at a time: each loop's events keep their order
    return landed


async def test_librdkafka_null_keys_and_murmur2_events_of_one_loop_all_count(
    shared_settings, shared_worker
):
    tag = uuid.uuid4().hex[:6]
    loops = [f"foreign-{tag}-{i}" for i in range(LOOPS)]
    topic = shared_settings.topics.actions
    bootstrap = shared_settings.kafka.bootstrap_servers
    async with LayerOneWarnings(shared_settings) as warnings:
        async with AsyncPublisher(shared_settings, batching=False) as publisher:
            # raise the offsets of the loops' own partitions, so a position compared
            # across partitions would look like a replay
            for loop_id in loops:
                for step in range(5):
                    await publisher.publish(loop_id, f"warm_up_{step}")  # no streak
            await publisher.flush()
            for loop_id in loops:
                await publisher.publish(loop_id, "search")
            await publisher.flush()
            landed = await asyncio.to_thread(
                _librdkafka_send,
                bootstrap,
                topic,
                [(loop.encode(), _event(loop, "search", 1e9)) for loop in loops]
                + [(None, _event(loop, "search", 1e9)) for loop in loops],
            )
            for loop_id in loops:
                await publisher.publish(loop_id, "search")
        got = await warnings.collect(2 * LOOPS, 90)
        extra = await warnings.collect(1, 3)

    own = {default_partition(loop.encode(), 4) for loop in loops}
    foreign = [
        p
        for p, loop in zip(landed, loops + loops, strict=True)
        if p != default_partition(loop.encode(), 4)
    ]
    assert foreign, f"librdkafka put every record on its murmur2 partition ({landed}, {own})"
    by_loop: dict[str, list[int]] = {}
    for warning in got:
        by_loop.setdefault(warning.loop_id, []).append(warning.consecutive_count)
    assert {loop: sorted(counts) for loop, counts in by_loop.items()} == {
        loop: [3, 4] for loop in loops
    }
    assert extra == []  # nothing applied twice
