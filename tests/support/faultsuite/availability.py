"""A worker lost mid-streak, and the broker lost under load.

- **failover**: two workers in one group; one is killed -9 while every loop is
  in the middle of a streak; the other takes its partitions over, restores the
  loops' state from the changelog and the streaks complete: no warning lost.
- **outage**: the connection to the broker is refused, then frozen (through the
  proxy), while events keep coming; the worker resumes by itself, and what it
  logged meanwhile is counted (a line a second is readable, a hundred is not).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient

from faultsuite.harness import (
    MONITOR_WARNINGS,
    Cluster,
    Workload,
    cluster,
    compare,
    expected_outputs,
    read_json,
    wait_committed,
    wait_ready,
)
from loopwarden.errors import PublishError
from loopwarden.streams.client.publisher import AsyncPublisher, make_action_event


def _streaks(tag: str, loops: int, length: int) -> Workload:
    """``loops`` loops of one repeated action each, interleaved: every loop spins."""
    start = time.time()  # near the records' own time, as a live agent's events
    events = [
        make_action_event(f"{tag}-{i}", "search", occurred_at=start + n, params={"n": n})
        for n in range(length)
        for i in range(loops)
    ]
    return Workload(events)


async def _publish_paced(
    settings: Any, workload: Workload, seconds: float, *, confirm_each: bool = False
) -> None:
    """Publish over ``seconds``; with ``confirm_each``, as an agent that rides out a
    broker outage would: wait for each event's acknowledgement and send it again
    (same id) until it is delivered, so each loop keeps its order."""
    events = workload.events
    pause = seconds / max(1, len(events))
    async with AsyncPublisher(settings) as publisher:
        for event in events:
            publisher.publish_event(event)
            if confirm_each:
                await _until_delivered(publisher, event)
            await asyncio.sleep(pause)


async def _until_delivered(publisher: AsyncPublisher, event: Any) -> None:
    while True:
        try:
            await publisher.flush()
            return
        except PublishError:  # the broker is away (a hung request expires the batch)
            await asyncio.sleep(0.5)
            publisher.publish_event(event)


async def _members(settings: Any) -> int:
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka.bootstrap_servers)
    await admin.start()
    try:
        groups = await admin.describe_consumer_groups([settings.app_id])
        group = groups[0].groups[0] if groups and groups[0].groups else None
        return len(group[5]) if group and group[2] == "Stable" else 0
    finally:
        await admin.close()


async def _results(c: Cluster, workload: Workload, catch_up_s: float) -> dict[str, Any]:
    names = c.settings.topics
    behind = await wait_committed(c.settings, [names.actions, names.actions_reroute], catch_up_s)
    warnings = [
        w
        for w in await read_json(c.settings.kafka.bootstrap_servers, names.warnings)
        if w["kind"] in MONITOR_WARNINGS and not w["loop_id"].startswith("ready-")
    ]
    expected = expected_outputs(workload, c.settings)
    return {
        "warnings": compare(expected.warnings, warnings, "warning_id").__dict__,
        "uncommitted_at_end": behind,
    }


async def failover_run(seed: int, *, loops: int = 16, length: int = 30) -> dict[str, Any]:
    """Kill one of two workers halfway through every loop's streak."""
    began = time.monotonic()
    with cluster(f"failover{seed}", analyst={"enabled": False}) as c:
        first, _second = c.start_worker(), c.start_worker()
        await wait_ready(c.settings)
        deadline = time.monotonic() + 120
        while await _members(c.settings) < 2 and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
        members = await _members(c.settings)
        workload = _streaks(f"streak-{seed}", loops, length)
        publishing = asyncio.create_task(_publish_paced(c.settings, workload, 12.0))
        await asyncio.sleep(6.0)  # halfway through every streak
        first.kill()
        first.wait(10)
        await publishing
        result = await _results(c, workload, 180)
    return {"seed": seed, "members_before_kill": members, **result, "seconds": _since(began)}


async def outage_run(seed: int, *, outage_s: float = 10.0) -> dict[str, Any]:
    """Refuse, then freeze, the broker connection for ``outage_s`` each under load."""
    began = time.monotonic()
    with cluster(f"outage{seed}", analyst={"enabled": False}, proxy=True) as c:
        c.start_worker()
        await wait_ready(c.settings)
        workload = _streaks(f"outage-{seed}", 8, 60)
        publishing = asyncio.create_task(
            _publish_paced(c.settings, workload, 6 * outage_s, confirm_each=True)
        )
        lines: dict[str, int] = {}
        for mode in ("refuse", "freeze"):
            await asyncio.sleep(outage_s)
            before = len(c.worker_logs().splitlines())
            c.proxy.set_mode(mode)
            await asyncio.sleep(outage_s)
            c.proxy.set_mode("up")
            lines[mode] = len(c.worker_logs().splitlines()) - before
        await publishing
        restored = time.monotonic()
        result = await _results(c, workload, 240)
        caught_up_s = time.monotonic() - restored
        log = c.worker_logs()
    return {
        "seed": seed,
        "outage_s": outage_s,
        "log_lines_per_s": {mode: round(n / outage_s, 1) for mode, n in lines.items()},
        "said_what_happened": _said(log),
        **result,
        "caught_up_after_s": round(caught_up_s, 1),
        "seconds": _since(began),
    }


def _said(log: str) -> bool:
    """The worker said that the broker was unreachable and that it recovered."""
    return "does not answer" in log and "answers again" in log


def _since(began: float) -> float:
    return round(time.monotonic() - began, 1)


def availability_ok(result: dict[str, Any]) -> bool:
    """No warning lost or changed and everything committed in the end."""
    return (
        result["warnings"]["missing"] == 0
        and result["warnings"]["changed"] == 0
        and not any(result["uncommitted_at_end"].values())
    )
