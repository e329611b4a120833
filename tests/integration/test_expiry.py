"""Idle loops expire: their state is dropped and a later event starts afresh."""

from __future__ import annotations

import asyncio
import itertools
import time

import pytest

from loopwarden.streams.client.publisher import AsyncPublisher, default_partition

from .conftest import LayerOneWarnings, isolated_settings

pytestmark = pytest.mark.integration


def two_loops_on_one_partition(partitions: int) -> tuple[str, str]:
    by_partition: dict[int, str] = {}
    for i in itertools.count():
        loop_id = f"idle-{i}"
        partition = default_partition(loop_id.encode(), partitions)
        if partition in by_partition:
            return by_partition[partition], loop_id
        by_partition[partition] = loop_id
    raise AssertionError("unreachable")


async def test_an_idle_loop_forgets_its_streak(broker, worker_factory):
    settings = isolated_settings(
        broker, "expiry", roles=["monitor"], idle_loop_ttl_s=60, expiry_sweep_interval_s=0.05
    )
    worker_factory(settings)
    idle, busy = two_loops_on_one_partition(settings.topics.partitions)
    t0 = time.time() - 7200  # event time in the past: within the records' clock
    async with LayerOneWarnings(settings) as warnings:
        async with AsyncPublisher(settings, batching=False) as publisher:
            await publisher.publish(idle, "search", occurred_at=t0)
            await publisher.publish(idle, "search", occurred_at=t0 + 1)
            # event time on the partition moves 10 minutes on; the busy loop's warning
            # tells us the worker got this far
            for i in range(3):
                await publisher.publish(busy, "think", occurred_at=t0 + 600 + i)
            await publisher.flush()
            (barrier,) = await warnings.collect(1, 60)
            assert barrier.loop_id == busy
            await asyncio.sleep(0.2)  # the next record on the partition runs the sweep
            await publisher.publish(busy, "write", occurred_at=t0 + 603)
            fresh = [
                await publisher.publish(idle, "search", occurred_at=t0 + 604 + i) for i in range(3)
            ]
        received = await warnings.collect(1, 30)
        received += await warnings.collect(1, 2)
    # without expiry the first new "search" would have been the third in a row
    assert [(w.loop_id, w.event_ids) for w in received] == [(idle, fresh)]


async def test_a_quiet_partition_reclaims_memory_but_changes_no_decision(broker, worker_factory):
    """The wall clock used to decide expiry: after a quiet spell the next event of a loop
    started afresh live but continued its streak in `detect`. Now the wall clock only
    frees loops that any later event would start afresh anyway.

    The old loop is dated within the grace of the partition's newest events, so only
    the wall clock can reclaim it: dated an hour back, it was reclaimed in the stream
    as soon as the next events were applied together with it (under load), and the
    wall-clock line this test waits for never came (issue 46, item 5)."""
    settings = isolated_settings(
        broker,
        "quiet",
        roles=["monitor"],
        idle_loop_ttl_s=1.5,
        expiry_sweep_interval_s=0.2,
        max_clock_skew_s=5,
    )
    worker = worker_factory(settings)
    idle, old = two_loops_on_one_partition(settings.topics.partitions)
    t0 = time.time()
    async with LayerOneWarnings(settings, loop_id=idle) as warnings:
        async with AsyncPublisher(settings, batching=False) as publisher:
            ready = [await publisher.publish(idle, "warmup", occurred_at=t0) for _ in range(3)]
            (barrier,) = await warnings.collect(1, 60)  # the worker is processing
            assert barrier.event_ids == ready
            # dated from now (the worker's start-up is behind us): the old loop idle for
            # 3 s of event time, within ttl + grace (6.5 s) of every later event on the
            # partition, past it on the wall clock a few seconds from now
            t1 = time.time()
            await publisher.publish(old, "search", occurred_at=t1 - 3)
            first = await publisher.publish(idle, "search", occurred_at=t1 + 1)
            second = await publisher.publish(idle, "search", occurred_at=t1 + 1)
            await asyncio.sleep(3.0)  # the subject: wall time passes, longer than the TTL
            third = await publisher.publish(idle, "search", occurred_at=t1 + 1)
        received = await warnings.collect(1, 30)
    # in event time the loop never paused: the third "search" in a row is a spin
    assert [w.event_ids for w in received] == [[first, second, third]]
    deadline = time.monotonic() + 30
    while "state of 1 idle loop(s) reclaimed" not in worker.log():
        assert time.monotonic() < deadline, worker.log()[-3000:]
        await asyncio.sleep(0.1)


async def test_an_event_dated_a_year_ahead_does_not_expire_its_neighbours(broker, worker_factory):
    """A producer's clock running ahead moved the partition's event time a year on, and
    every other loop of the partition lost its state (seen in the outage scenario)."""
    settings = isolated_settings(
        broker, "skew", roles=["monitor"], idle_loop_ttl_s=900, expiry_sweep_interval_s=0.05
    )
    worker_factory(settings)
    steady, skewed = two_loops_on_one_partition(settings.topics.partitions)
    now = time.time()
    async with LayerOneWarnings(settings) as warnings:
        async with AsyncPublisher(settings, batching=False) as publisher:
            await publisher.publish(steady, "search", occurred_at=now)
            await publisher.publish(steady, "search", occurred_at=now + 1)
            for i in range(3):  # a year ahead
                await publisher.publish(skewed, "think", occurred_at=now + 365 * 86400 + i)
            await publisher.flush()
            (barrier,) = await warnings.collect(1, 60)
            assert barrier.loop_id == skewed
            await asyncio.sleep(0.2)  # the next record on the partition runs the sweep
            await publisher.publish(skewed, "write", occurred_at=now + 365 * 86400 + 3)
            third = await publisher.publish(steady, "search", occurred_at=now + 2)
        received = await warnings.collect(1, 30)
    assert [(w.loop_id, w.trigger_event_id, w.consecutive_count) for w in received] == [
        (steady, third, 3)
    ]
