"""Single-event records (a librdkafka producer) are consumed in bundles: every event is
applied once, a bad record is dead-lettered alone, and the group commits every offset.

The backlog is published before the worker starts, so its first fetches return long
runs of each partition: bundles of many records, whose earlier offsets Faust only
commits through the gap the consumer records for them.
"""

from __future__ import annotations

import asyncio
import signal
import time

import pytest
from confluent_kafka import Producer

from loopwarden.agents.monitor.loop_monitor import LoopMonitor
from loopwarden.agents.monitor.state import LoopState
from loopwarden.schemas import codec
from loopwarden.settings import DetectionSettings
from loopwarden.streams.client.publisher import make_action_event
from loopwarden.streams.client.subscriber import DeadLetterSubscriber
from loopwarden.streams.tools.replay_reader import wait_until_committed

from .conftest import LayerOneWarnings, create_topics, isolated_settings

pytestmark = pytest.mark.integration

LOOPS, EVENTS = 40, 1200


def _actions(tag: str) -> list[tuple[str, str]]:
    """(loop id, action type): loop i repeats one action in streaks of 1 to 4."""
    pairs = []
    for n in range(EVENTS):
        loop = n % LOOPS
        streak = 1 + (n // LOOPS + loop) % 4
        pairs.append((f"{tag}-{loop}", f"act-{(n // LOOPS) // streak % 3}"))
    return pairs


def _expected_warnings(pairs: list[tuple[str, str]]) -> int:
    monitor, states, count = LoopMonitor(DetectionSettings(profile="seed")), {}, 0
    for i, (loop_id, action) in enumerate(pairs):
        state = states.setdefault(loop_id, LoopState(loop_id))
        findings = monitor.observe(state, make_action_event(loop_id, action, event_id=f"x{i}"))
        count += len(findings.warnings) if findings else 0
    return count


def _librdkafka_backlog(bootstrap: str, topic: str, records: list[tuple[bytes, bytes]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
    for key, value in records:
        producer.produce(topic, value=value, key=key)
    assert producer.flush(30) == 0


async def _diagnostics(worker, runner: str, timeout_s: float = 30) -> str:
    """The worker's SIGUSR1 account of ``runner``."""
    worker.process.send_signal(signal.SIGUSR1)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        lines = [line for line in worker.log().splitlines() if f"runner {runner}:" in line]
        if lines:
            return lines[-1]
        await asyncio.sleep(0.2)
    raise AssertionError(f"no diagnostics in the log:\n{worker.log()[-3000:]}")


async def test_a_backlog_of_single_event_records_is_bundled_applied_once_and_committed(
    broker, worker_factory
):
    settings = isolated_settings(broker, "bundles", roles=["monitor"])
    tag = "bundled"
    pairs = _actions(tag)
    records = [
        (loop_id.encode(), _encoded(loop_id, action, f"{tag}-{i}"))
        for i, (loop_id, action) in enumerate(pairs)
    ]
    bad_key = f"{tag}-7".encode()
    records.insert(EVENTS // 2, (bad_key, b"{not json"))
    create_topics(settings)
    topic, bootstrap = settings.topics.actions, settings.kafka.bootstrap_servers
    await asyncio.to_thread(_librdkafka_backlog, bootstrap, topic, records)

    expected = _expected_warnings(pairs)
    async with (
        LayerOneWarnings(settings, from_beginning=True, dedupe=False) as warnings,
        DeadLetterSubscriber(settings, from_beginning=True) as letters,
    ):
        worker = worker_factory(settings)
        received = await warnings.collect(expected, 120)
        dead = await letters.collect(1, 60)
        await wait_until_committed(bootstrap, settings.app_id, [topic], timeout_s=60)
        account = await _diagnostics(worker, "monitor_actions")
        late = await warnings.collect(1, 2)  # nothing more arrives: no event twice

    assert len(received) == expected and not late
    assert len({w.trigger_event_id for w in received}) == expected
    assert [(d.reason, d.key, d.value) for d in dead] == [("decode", bad_key, b"{not json")]
    processed, consumed = _counts(account)
    assert processed == EVENTS + 1  # every record (the bad one too) handled once
    assert consumed < processed / 10, account  # in bundles, not one message per record

    # a successor starts from the committed offsets (bundles acknowledged with their
    # members): it warns for the second backlog once, and commits its end
    worker.stop()
    second = _actions(f"{tag}-again")
    await asyncio.to_thread(
        _librdkafka_backlog,
        bootstrap,
        topic,
        [
            (loop.encode(), _encoded(loop, action, f"again-{i}"))
            for i, (loop, action) in enumerate(second)
        ],
    )
    expected_again = _expected_warnings(second)
    async with LayerOneWarnings(settings, from_beginning=True, dedupe=False) as warnings:
        worker_factory(settings, "successor")
        everything = await warnings.collect(expected + expected_again, 120)
        await wait_until_committed(bootstrap, settings.app_id, [topic], timeout_s=60)
        late = await warnings.collect(1, 2)
    # (records read twice around the start-up seek are recognised as replays)
    assert len(everything) == expected + expected_again and not late
    assert len({w.trigger_event_id for w in everything}) == expected + expected_again


def _encoded(loop_id: str, action: str, event_id: str) -> bytes:
    event = make_action_event(loop_id, action, event_id=event_id)
    return codec.dumps(event.model_dump(mode="json", exclude_none=True))


def _counts(account: str) -> tuple[int, int]:
    # "runner monitor_actions: processed N, failed F, retries R, in M consumed message(s)"
    processed = int(account.split("processed ")[1].split(",")[0])
    failed = int(account.split("failed ")[1].split(",")[0])
    consumed = int(account.split(" in ")[1].split(" consumed")[0])
    return processed + failed, consumed
