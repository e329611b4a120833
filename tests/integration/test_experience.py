"""Experience replay end to end: a real worker, the embedded broker, LanceDB, the USE embedder.

A scripted agent explores a task once (noisy: a wait, a failed tap and its retry, a
repeated tap, a detour it backs out of, a password), then starts the same task again,
a paraphrase, a new item of the same pattern, and replays that fail.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import pytest

from loopwarden.schemas.tasks import Advice
from loopwarden.storage.experience_table import ExperienceTable
from loopwarden.streams.client.publisher import AsyncPublisher
from loopwarden.streams.client.subscriber import DeadLetterSubscriber
from loopwarden.streams.client.sync_publisher import Publisher
from loopwarden.streams.client.tasks import end_task, start_task

from .conftest import isolated_settings

pytestmark = pytest.mark.integration

SECRET = "s3cr3t-Pa55word!"
TASK = {"intent": "shopping", "app_name": "taobao", "app_version": "10.2"}
DESCRIPTION = "search iPhone 15 on Taobao and order it"
NOISY_EXPLORATION = [
    ("open_app", {"app": "taobao"}, True),
    ("wait", {"seconds": 2}, True),
    ("login", {"user": "ann", "password": SECRET}, True),
    ("input", {"text": "iPhone 15"}, True),
    ("tap", {"target": "search"}, False),
    ("tap", {"target": "search"}, True),
    ("tap", {"target": "search"}, True),
    ("tap", {"target": "sponsored banner"}, True),
    ("back", {}, True),
    ("tap", {"target": "first result"}, True),
    ("tap", {"target": "place order"}, True),
]
CLEAN_PATH = ["open_app", "login", "input", "tap", "tap", "tap"]


def experiences(settings) -> list[dict]:
    return ExperienceTable(settings.memory.uri, 512, settings.experience.table).all()


async def wait_for_rows(settings, count: int, timeout_s: float = 60.0) -> list[dict]:
    """The table once it holds ``count`` rows (the worker learns before it commits)."""
    deadline = time.monotonic() + timeout_s
    while True:
        rows = experiences(settings)
        if len(rows) >= count or time.monotonic() > deadline:
            return rows
        await asyncio.sleep(0.2)


async def follow(publisher: AsyncPublisher, loop_id: str, advice: Advice, success: bool) -> None:
    for step in advice.steps:
        await publisher.publish(loop_id, step.action_type, params=step.params)
    await end_task(publisher, loop_id, success)


async def test_explore_once_then_go_direct(broker, worker_factory):
    settings = isolated_settings(broker, "experience", ["experience"])
    worker = worker_factory(settings)
    loop = f"order-{uuid.uuid4().hex[:6]}"
    async with AsyncPublisher(settings) as publisher:
        first = await start_task(publisher, loop, DESCRIPTION, timeout_s=90, **TASK)
        assert first.strategy == "reflexion_explore" and first.steps == []
        for action_type, params, ok in NOISY_EXPLORATION:
            await publisher.publish(loop, action_type, params=params, success=ok)
        await end_task(publisher, loop, True)

        # the same task again, in the same loop: in order behind the end that taught it
        direct = await start_task(publisher, loop, DESCRIPTION, **TASK)
        assert direct.strategy == "direct_replay", direct.timeline_message
        assert [s.action_type for s in direct.steps] == CLEAN_PATH
        assert direct.steps[2].params == {"text": "iPhone 15"}
        assert [s.key_point for s in direct.steps][:3] == ["navigation", None, "input"]
        assert direct.steps[-1].key_point == "confirmation"
        await follow(publisher, loop, direct, True)

        stored = await wait_for_rows(settings, 1)
        assert len(stored) == 1
        assert stored[0]["dropped"] == {
            "wait": 1,
            "failed": 1,
            "repeat": 1,
            "back_out": 1,
            "backed_out_of": 1,
        }

        paraphrase = await start_task(
            publisher, f"{loop}-p", "find iPhone 15 on Taobao and buy it", **TASK
        )
        assert paraphrase.strategy == "adaptive_replay", paraphrase.scores
        assert paraphrase.steps[2].params == {"text": "iPhone 15"}

        new_item = await start_task(
            publisher, f"{loop}-n", "search AirPods on Taobao and order it", **TASK
        )
        assert new_item.strategy == "guided_exploration", new_item.timeline_message
        assert new_item.slots["text"] == "AirPods"
        assert new_item.steps[2].params == {"text": "AirPods"}

        other_version = await start_task(
            publisher, f"{loop}-v", DESCRIPTION, **{**TASK, "app_version": "11.0"}
        )
        assert other_version.strategy == "direct_replay" and other_version.experimental

        # replays that fail: 1.0 → (one success) → 0.7 → 0.49, flagged for re-exploration
        strategies = []
        for n in range(3):
            replay_loop = f"{loop}-f{n}"
            advice = await start_task(publisher, replay_loop, DESCRIPTION, **TASK)
            strategies.append(advice.strategy)
            if advice.strategy == "reflexion_explore":
                break
            await follow(publisher, replay_loop, advice, False)
            # the next start must see this end: the end's loop is another partition's
            # maybe, so wait until the worker has applied it
            await wait_for_use_count(settings, n + 2)
        assert strategies == ["direct_replay", "adaptive_replay", "reflexion_explore"]
        assert advice.reexplore

    rows = experiences(settings)
    assert len(rows) == 1  # replays are not learned again
    assert rows[0]["replay_successes"] == 1 and rows[0]["replay_failures"] == 2
    files = [p for p in Path(settings.memory.uri).rglob("*") if p.is_file()]
    assert not any(SECRET.encode() in p.read_bytes() for p in files)
    assert SECRET not in str(direct.model_dump())
    assert "worker started" in worker.log()


async def wait_for_use_count(settings, count: int, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        rows = [row for row in experiences(settings) if row["outcome"] == "success"]
        if rows and rows[0]["use_count"] >= count:
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"use count did not reach {count}: {rows}")


async def test_a_bad_task_event_is_dead_lettered_and_the_next_one_answered(broker, worker_factory):
    settings = isolated_settings(broker, "experience-bad", ["experience"])
    worker_factory(settings)
    loop = f"bad-{uuid.uuid4().hex[:6]}"
    async with AsyncPublisher(settings) as publisher:
        async with DeadLetterSubscriber(settings) as letters:
            bad = b'{"event_id": "b1", "type": "task_start", "loop_id": "%s", "occurred_at": 1, '
            bad += b'"payload": {}}'
            await publisher.send_raw(bad % loop.encode(), key=loop.encode())
            letter = (await letters.collect(1, 90))[0]
        assert "payload.task_description" in letter.message
        answer = await start_task(publisher, loop, "book a table for two", timeout_s=60)
        assert answer.strategy == "reflexion_explore"
        assert answer.task_event_id != "b1"
    # the synchronous publisher: explore, end, and the same task again goes direct
    assert await asyncio.to_thread(sync_explore_then_replay, settings, f"{loop}-sync") == [
        "reflexion_explore",
        "direct_replay",
    ]


def sync_explore_then_replay(settings, loop: str) -> list[str]:
    strategies = []
    with Publisher(settings) as publisher:
        for _ in range(2):
            advice = publisher.start_task(loop, "book a table for two at Luigi's", timeout_s=60)
            strategies.append(advice.strategy)
            publisher.publish(loop, "open_app", params={"app": "tables"})
            publisher.publish(loop, "tap", params={"target": "book"})
            publisher.end_task(loop, True)
    return strategies
