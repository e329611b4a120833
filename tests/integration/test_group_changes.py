"""Scaling the worker group out and in changes nothing agents are told (issue 72.1).

One worker, a second joining (it takes some of the partitions), then the second
stopped with SIGTERM (a graceful scale-in, as a deploy or an autoscaler does it): a
partition returns to a worker that owned it before the scale-out. Every loop repeats
one action, so the seed profile's warnings count 3, 4, 5, ... — the offline
detection's answer. A returning owner that carried on from the state it held before
would count again from there (the same count twice, one missing).
"""

from __future__ import annotations

import asyncio
import itertools
import time

import pytest
from group_owners import owned

from loopwarden.streams.client.publisher import AsyncPublisher, default_partition

from .conftest import LayerOneWarnings, isolated_settings

pytestmark = pytest.mark.integration

LOOPS = [f"scaled-{n}" for n in range(12)]


async def wait_owners(settings, workers, timeout_s: float = 90) -> list[set[int]]:
    """Each worker's partitions of the actions topic once they share every partition
    (records published after that reach their owner, after its recovery)."""
    topic, partitions = settings.topics.actions, settings.topics.partitions
    deadline = time.monotonic() + timeout_s
    held: list[set[int]] = []
    while time.monotonic() < deadline:
        held = [owned(worker.log(), topic) for worker in workers]
        everything = sorted(p for each in held for p in each)
        if everything == list(range(partitions)) and all(held):
            return held
        await asyncio.sleep(0.2)
    raise AssertionError(f"the workers never shared the {partitions} partitions: {held}")


def partitions_of(settings) -> list[int]:
    """The actions partition of each loop."""
    return [default_partition(loop.encode(), settings.topics.partitions) for loop in LOOPS]


async def publish_round(settings, action: str) -> None:
    async with AsyncPublisher(settings, batching=False) as publisher:
        for loop_id in LOOPS:
            await publisher.publish(loop_id, action)


async def test_scale_out_and_in_keeps_every_loops_count(broker, worker_factory):
    settings = isolated_settings(broker, "group-change", roles=["monitor"])
    first = worker_factory(settings, "first")
    expected: list[tuple[str, int]] = []
    async with LayerOneWarnings(settings, from_beginning=True, dedupe=False) as warnings:
        for _ in range(3):
            await publish_round(settings, "search")
        received = await warnings.collect(len(LOOPS), 90)
        expected += [(loop_id, 3) for loop_id in LOOPS]
        await wait_owners(settings, [first])

        second_settings = settings.model_copy(update={"data_dir": f"{settings.data_dir}-second"})
        second = worker_factory(second_settings, "second")
        _, taken = await wait_owners(settings, [first, second])
        moved = [p for p in partitions_of(settings) if p in taken]
        for count in (4, 5):  # the second worker applies these to the loops it took
            await publish_round(settings, "search")
            received += await warnings.collect(len(LOOPS), 90)
            expected += [(loop_id, count) for loop_id in LOOPS]

        assert second.stop() == 0, second.log()[-3000:]
        await wait_owners(settings, [first])  # it logs its new assignment after the leave
        await publish_round(settings, "search")  # the first worker owns every loop again
        received += await warnings.collect(len(LOOPS), 90)
        expected += [(loop_id, 6) for loop_id in LOOPS]
        received += await warnings.collect(1, 3)  # nothing more

    assert moved, "the second worker took no loop: the scenario tested nothing"
    got = sorted((w.loop_id, w.consecutive_count) for w in received)
    assert got == sorted(expected), first.log()[-3000:]


async def test_scale_out_and_in_under_traffic(broker, worker_factory):
    """1 -> 3 -> 1 workers while every loop keeps stepping."""
    settings = isolated_settings(broker, "group-traffic", roles=["monitor"])
    first = worker_factory(settings, "first")
    rounds = 0
    stop = asyncio.Event()
    round_of: dict[str, int] = {}

    async def traffic() -> None:
        nonlocal rounds
        async with AsyncPublisher(settings, batching=False) as publisher:
            while not stop.is_set():
                for loop_id in LOOPS:
                    round_of[await publisher.publish(loop_id, "search")] = rounds + 1
                rounds += 1
                await asyncio.sleep(0.2)

    async with LayerOneWarnings(settings, from_beginning=True, dedupe=False) as warnings:
        publishing = asyncio.create_task(traffic())
        await wait_owners(settings, [first])
        others = [
            worker_factory(
                settings.model_copy(update={"data_dir": f"{settings.data_dir}-{n}"}), f"w{n}"
            )
            for n in (2, 3)
        ]
        await wait_owners(settings, [first, *others])
        for worker in others:
            assert worker.stop() == 0, worker.log()[-3000:]
        await wait_owners(settings, [first])
        await asyncio.sleep(1)
        stop.set()
        await publishing
        expected = sorted((loop_id, n) for loop_id in LOOPS for n in range(3, rounds + 1))
        received = await warnings.collect(len(expected), 120)
        received += await warnings.collect(1, 3)
    got = sorted((w.loop_id, w.consecutive_count) for w in received)
    if got != expected:
        history = await changelog_history(settings, LOOPS[3])
        logs = "\n".join(w.log()[-2500:] for w in [first, *others])
        told = [
            (w.consecutive_count, w.iteration, [round_of.get(e) for e in w.event_ids][-1])
            for w in received
            if w.loop_id == LOOPS[3]
        ]
        raise AssertionError(
            f"{rounds} rounds; {differences(received, rounds)}\n{LOOPS[3]} told "
            f"(count, rounds of its events): {told}\n{LOOPS[3]}'s changelog "
            f"(time, iteration): {history}\n{logs}"
        )


async def changelog_history(settings, loop_id: str) -> list[tuple[int, int | None]]:
    """Each changelog record of ``loop_id``'s state: its time and iteration."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    from loopwarden.agents.monitor.state import LoopState

    topic = f"{settings.app_id}-loop-state-changelog"
    tp = TopicPartition(topic, default_partition(loop_id.encode(), settings.topics.partitions))
    consumer = AIOKafkaConsumer(bootstrap_servers=settings.kafka.bootstrap_servers)
    await consumer.start()
    try:
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        end = (await consumer.end_offsets([tp]))[tp]
        history: list[tuple[int, int | None]] = []
        while await consumer.position(tp) < end:
            batch = await consumer.getmany(tp, timeout_ms=1000)
            for record in batch.get(tp, []):
                if record.key == loop_id.encode():
                    state = LoopState.restore(loop_id, record.value) if record.value else None
                    history.append((record.timestamp % 100_000, state and state.iteration))
        return history
    finally:
        await consumer.stop()


def differences(received, rounds: int) -> str:
    """Per loop, the counts told out of the offline order (a reset shows as a drop)."""
    told: dict[str, list[int]] = {}
    for warning in received:
        told.setdefault(warning.loop_id, []).append(warning.consecutive_count)
    lines = []
    for loop_id, counts in sorted(told.items()):
        drops = [(a, b) for a, b in itertools.pairwise(counts) if b != a + 1]
        if drops or counts[-1] != rounds:
            lines.append(f"{loop_id}: {len(counts)} told, last {counts[-1]}, jumps {drops[:6]}")
    return "; ".join(lines)
