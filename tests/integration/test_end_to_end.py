"""Publish actions → the worker detects → the subscriber receives warnings."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from loopwarden.schemas.levels import ReflectionLevel
from loopwarden.schemas.reflection import ReflectionRequestKind
from loopwarden.schemas.warnings import LoopWarning, WarningKind
from loopwarden.streams.client.publisher import AsyncPublisher
from loopwarden.streams.client.subscriber import ReflectionRequestSubscriber, WarningSubscriber
from loopwarden.streams.client.sync_publisher import Publisher

pytestmark = pytest.mark.integration
TIMEOUT = 60


def loop_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


async def test_spin_published_async_reaches_the_loop_subscriber(shared_settings, shared_worker):
    loop_id = loop_name("spinner")
    async with WarningSubscriber(shared_settings, loop_id=loop_id) as warnings:
        async with AsyncPublisher(shared_settings) as publisher:
            ids = [
                await publisher.publish(loop_id, "web_search", params={"q": "x"}) for _ in range(3)
            ]
        (warning,) = await warnings.collect(1, TIMEOUT)
    assert warning.kind is WarningKind.ACTION_TYPE_SPIN
    assert warning.loop_id == loop_id
    assert warning.event_ids == ids
    assert warning.trigger_event_id == ids[-1]
    assert warning.consecutive_count == 3
    assert warning.level is ReflectionLevel.MINIMAL
    assert warning.timeline_message.startswith("⚠️ [SPIN DETECTED]")
    assert warning.suggestions


async def test_sync_publisher_and_an_all_loops_subscriber(shared_settings, shared_worker):
    failing, spinning = loop_name("failing"), loop_name("spin")

    def publish_sync() -> list[str]:
        with Publisher(shared_settings) as publisher:
            ids = [
                publisher.publish(
                    failing, "shell", success=False, error_message="permission denied"
                )
            ]
            ids += [publisher.publish(spinning, "read_file") for _ in range(3)]
        return ids

    async with WarningSubscriber(shared_settings) as warnings:
        ids = await asyncio.to_thread(publish_sync)
        by_loop: dict[str, LoopWarning] = {}
        # the spin is warned twice (action_type_spin, logic_spin), on another partition
        # than the failure: wait for both loops, whatever order the partitions come in
        async for warning in warnings:
            if warning.loop_id in (failing, spinning):
                by_loop.setdefault(warning.loop_id, warning)
            if len(by_loop) == 2:
                break
    assert by_loop[failing].kind is WarningKind.ACTION_FAILED
    assert by_loop[failing].level is ReflectionLevel.CRITICAL
    assert by_loop[failing].event_ids == [ids[0]]
    assert "MANDATORY RECOMMENDATIONS" in by_loop[failing].timeline_message
    assert by_loop[spinning].event_ids == ids[1:]


async def test_unbatched_records_are_read_the_same(shared_settings, shared_worker):
    loop_id = loop_name("plain")
    async with WarningSubscriber(shared_settings, loop_id=loop_id) as warnings:
        async with AsyncPublisher(shared_settings, batching=False) as publisher:
            for _ in range(4):
                await publisher.publish(loop_id, "grep")
        received = await warnings.collect(2, TIMEOUT)
    assert [w.consecutive_count for w in received] == [3, 4]


async def test_a_loop_subscriber_sees_only_its_loop(shared_settings, shared_worker):
    mine, others = loop_name("mine"), [loop_name("other") for _ in range(6)]
    async with WarningSubscriber(shared_settings, loop_id=mine) as warnings:
        async with AsyncPublisher(shared_settings) as publisher:
            for loop_id in [*others, mine]:
                for _ in range(3):
                    await publisher.publish(loop_id, "ls")
        received = await warnings.collect(3, 8)
    assert {w.loop_id for w in received} == {mine}
    assert [w.kind for w in received if w.kind is WarningKind.ACTION_TYPE_SPIN] == [
        WarningKind.ACTION_TYPE_SPIN
    ]


async def test_failure_asks_for_a_critical_reflection(shared_settings, shared_worker):
    loop_id = loop_name("critical")
    async with ReflectionRequestSubscriber(shared_settings, loop_id=loop_id) as requests:
        async with AsyncPublisher(shared_settings) as publisher:
            event_id = await publisher.publish(
                loop_id, "deploy", success=False, error_message="exit 1", duration_ms=1200
            )
        (request,) = await requests.collect(1, TIMEOUT)
    assert request.kind is ReflectionRequestKind.ACTION_REFLECTION
    assert request.level is ReflectionLevel.CRITICAL
    assert request.trigger_event_id == event_id
    assert request.memory_budget_bytes == 10 * 1024
    assert request.reflection.execution_time_ms == 1200
    assert request.reflection.environmental_impact.negative_effects == ["action failed: exit 1"]


async def test_code_edit_spin_end_to_end(shared_settings, shared_worker):
    loop_id = loop_name("editor")
    async with WarningSubscriber(shared_settings, loop_id=loop_id) as warnings:
        async with AsyncPublisher(shared_settings) as publisher:
            for start, end in [(10, 12), (11, 13), (10, 11), (12, 14)]:
                await publisher.publish(
                    loop_id, "modify_code", edit={"start_line": start, "end_line": end}
                )
                await publisher.publish(loop_id, "run_tests")
        (warning,) = await warnings.collect(1, TIMEOUT)
    assert warning.kind is WarningKind.CODE_EDIT_SPIN
    assert "lines 12-14" in warning.timeline_message


async def test_a_worker_creates_its_data_directory(broker, worker_factory, tmp_path):
    from .conftest import isolated_settings

    settings = isolated_settings(broker, "datadir").model_copy(
        update={"data_dir": str(tmp_path / "not" / "there" / "yet")}
    )
    worker_factory(settings)
    loop_id = loop_name("fresh")
    async with WarningSubscriber(settings, loop_id=loop_id) as warnings:
        async with AsyncPublisher(settings) as publisher:
            for _ in range(3):
                await publisher.publish(loop_id, "ls")
        received = await warnings.collect(1, TIMEOUT)
    assert received and received[0].consecutive_count == 3
    assert (tmp_path / "not" / "there" / "yet").is_dir()
