"""A worker restarted mid-stream resumes from its table's changelog."""

from __future__ import annotations

import asyncio
import time

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from loopwarden.streams.client.publisher import AsyncPublisher, default_partition

from .conftest import LayerOneWarnings, isolated_settings

pytestmark = pytest.mark.integration


async def wait_committed(settings, loop_id: str, offset: int, timeout_s: float = 60) -> None:
    """Wait until the worker's group committed past ``offset`` on ``loop_id``'s partition."""
    tp = TopicPartition(
        settings.topics.actions,
        default_partition(loop_id.encode(), settings.topics.partitions),
    )
    # A group member that never joins: it only reads the group's committed offsets.
    reader = AIOKafkaConsumer(
        bootstrap_servers=settings.kafka.bootstrap_servers,
        group_id=settings.app_id,
        enable_auto_commit=False,
    )
    await reader.start()
    try:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            committed = await reader.committed(tp)
            if committed is not None and committed > offset:
                return
            await asyncio.sleep(0.2)
        raise AssertionError(f"{settings.app_id} never committed past {tp}@{offset}")
    finally:
        await reader.stop()


@pytest.mark.parametrize("stop", ["kill", "terminate"])
async def test_spin_straddling_a_restart_is_detected_once(broker, worker_factory, stop):
    settings = isolated_settings(broker, f"restart-{stop}", roles=["monitor"])
    straddle, repeat = "straddle", "repeat"
    first = worker_factory(settings, "first", cold=True)  # real processes, killed and started
    async with AsyncPublisher(settings, batching=False) as publisher:
        before = [await publisher.publish(straddle, "search") for _ in range(2)]
        repeat_ids = [await publisher.publish(repeat, "read") for _ in range(3)]
    await wait_committed(settings, straddle, 1)
    await wait_committed(settings, repeat, 2)
    first.kill() if stop == "kill" else first.stop()

    worker_factory(settings, "second", cold=True)
    async with LayerOneWarnings(settings, from_beginning=True, dedupe=False) as warnings:
        async with AsyncPublisher(settings, batching=False) as publisher:
            after = await publisher.publish(straddle, "search")
            repeat_ids.append(await publisher.publish(repeat, "read"))
        received = await warnings.collect(3, 90)
        extra = await warnings.collect(1, 3)

    by_loop = sorted((w.loop_id, w.consecutive_count) for w in received)
    assert by_loop == [(repeat, 3), (repeat, 4), (straddle, 3)]
    assert extra == []  # nothing was re-sent after the restart
    straddling = next(w for w in received if w.loop_id == straddle)
    assert straddling.event_ids == [*before, after]
    latest = next(w for w in received if w.consecutive_count == 4)
    assert latest.event_ids == repeat_ids[-3:]
