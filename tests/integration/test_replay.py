"""Audit replay against a real worker's recording on the embedded broker.

A session is recorded by a live worker (spins, an edit spin, failures, a
guardrail family with reruns, a bad record), then ``loopwarden replay`` runs as
a real subprocess and must reproduce every recorded warning, request and
decision, by offsets, by time and by loop, and explain every difference when
the settings change.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime

import orjson
import pytest
from warm_processes import run_warm

from loopwarden.schemas.families import rerun_loop_id
from loopwarden.schemas.ids import derived_id
from loopwarden.schemas.positions import default_partition
from loopwarden.settings import Settings, settings_env
from loopwarden.streams.client.publisher import AsyncPublisher
from loopwarden.streams.client.tasks import end_task, start_task
from loopwarden.streams.tools.replay_reader import (
    TopicRangeReader,
    wait_until_committed,
)

from .conftest import isolated_settings

TASK = "book a table for two at Luigi's"
REPLAYABLE = ["monitor", "guardrails", "fleet", "experience"]
"""The roles a replay re-runs (every capability with a ``Replay``): the recording worker
runs exactly these, so every output the replay makes was recorded or missed."""

pytestmark = pytest.mark.integration


def replay(settings: Settings, *args: str, env: dict[str, str] | None = None, cold=False):
    """``loopwarden replay --json …`` in a process of its own, forked warm
    (``tests/support/warm_processes.py``) or with ``cold`` a new ``python -m loopwarden``:
    (exit code, report, stderr)."""
    command = ["replay", "--json", "--no-progress", *args]
    environment = {**os.environ, **settings_env(settings), **(env or {})}
    if cold:
        run = subprocess.run(
            [sys.executable, "-m", "loopwarden", *command],
            env=environment,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    else:
        run = run_warm(command, environment, timeout=120)
    report = orjson.loads(run.stdout) if run.stdout.strip() else None
    return run.returncode, report, run.stderr


async def processed_everything(settings: Settings, timeout_s: float = 90) -> None:
    """Wait until the workers' group has committed the end of both input topics."""
    topics = [settings.topics.actions, settings.topics.loop_completions]
    await wait_until_committed(
        settings.kafka.bootstrap_servers, settings.app_id, topics, timeout_s, poll_s=0.2
    )


async def read_all(settings: Settings, topic: str) -> list[dict]:
    """Every record of ``topic`` as JSON."""
    async with TopicRangeReader(settings.kafka.bootstrap_servers) as reader:
        spans = await reader.whole(topic)
        return [orjson.loads(r.value) async for batch in reader.read(spans) for r in batch]


@dataclass
class Session:
    spin: str
    edit: str
    fail: str
    family: str
    task: str = ""
    strategies: list[str] = field(default_factory=list)
    spin_events: list[str] = field(default_factory=list)
    middle_ms: int = 0


async def record_session(settings: Settings, tag: str) -> Session:
    """Publish the session in two halves (``middle_ms`` between them) and wait for it."""
    s = Session(f"spin-{tag}", f"edit-{tag}", f"fail-{tag}", f"fam-{tag}", f"task-{tag}")
    async with AsyncPublisher(settings) as publisher:
        advice = await start_task(publisher, s.task, TASK, timeout_s=60)
        for action_type in ("open_app", "search", "tap"):
            await publisher.publish(s.task, action_type, params={"q": "x"}, success=True)
        await end_task(publisher, s.task, True)
        s.strategies.append(advice.strategy)
        for _ in range(2):
            s.spin_events.append(await publisher.publish(s.spin, "search", params={"q": "x"}))
        await publisher.publish(s.edit, "edit_file", edit={"start_line": 10, "end_line": 11})
        await publisher.publish(s.fail, "run_tests", success=False, error_message="2 failed")
        await publisher.complete_loop(s.family, 0.5, 0.5, max_reruns=2)
        await publisher.flush()
        s.middle_ms = int(time.time() * 1000) + 1
        while int(time.time() * 1000) <= s.middle_ms:  # records after this are stamped later
            await asyncio.sleep(0.005)
        for _ in range(3):
            s.spin_events.append(await publisher.publish(s.spin, "search", params={"q": "x"}))
        s.strategies.append((await start_task(publisher, s.task, TASK, timeout_s=60)).strategy)
        for line in (11, 12):
            await publisher.publish(
                s.edit, "edit_file", edit={"start_line": line, "end_line": line}
            )
        await publisher.publish(s.fail, "run_tests", success=False, error_message="2 failed")
        await publisher.send_raw(b'{"loop_id": "' + s.fail.encode() + b'", "payload": ', b"x")
        for index in (1, 2):
            loop = rerun_loop_id(s.family, index)
            await publisher.complete_loop(loop, 0.5, 0.5, max_reruns=2)
        await publisher.flush()
    await processed_everything(settings)
    return s


@pytest.fixture(scope="module")
def recorded(broker, tmp_path_factory):
    """One recorded session, shared by the read-only replays below."""
    from .conftest import WorkerProcess, create_topics

    settings = isolated_settings(broker, "audit", REPLAYABLE)
    settings = settings.model_copy(
        update={
            "analyst": settings.analyst.model_copy(update={"enabled": False}),
            # experience's advice is replayed too; the hashing embedder keeps it cheap
            "memory": settings.memory.model_copy(update={"embedder": "hashing"}),
        }
    )
    create_topics(settings)
    worker = WorkerProcess(settings, tmp_path_factory.mktemp("audit") / "worker.log").start()
    try:
        session = asyncio.run(record_session(settings, uuid.uuid4().hex[:6]))
    finally:
        assert worker.stop() == 0, worker.log()[-3000:]
    return settings, session


def test_the_whole_recording_is_reproduced(recorded):
    settings, s = recorded
    code, report, err = replay(settings, cold=True)  # the command as a user starts it
    assert code == 0, (err, report)
    totals = report["totals"]
    assert totals["missing"] == totals["unexpected"] == totals["changed"] == 0
    loops = {row["loop_id"]: row for row in report["loops"]}
    # every kind of output was there to compare: spins, edit spin, failures, decisions
    assert loops[s.spin]["matched"] >= 3 and loops[s.edit]["matched"] >= 1
    assert loops[s.fail]["matched"] >= 2
    assert loops[rerun_loop_id(s.family, 2)]["matched"] >= 2  # decision + limit warning
    # experience's advice, explored then replayed, each matched at the store as it was
    assert s.strategies == ["reflexion_explore", "direct_replay"]
    assert loops[s.task]["matched"] == 2 and report["not_replayed"] == 0
    assert report["dead_letters"] == 1
    assert any("dead-lettered" in note for note in report["notes"])


def test_a_shell_without_the_deployments_settings_replays_with_the_recorded_ones(recorded):
    """The workers ran the seed profile; a shell on the default (loops) profile replays
    with the settings the outputs carry (issue 32, item 8), and with its own only when
    asked (--current-settings: a what-if whose differences are all settings)."""
    settings, s = recorded
    shell = {"LOOPWARDEN_DETECTION__PROFILE": "loops"}
    code, report, err = replay(settings, "--loop", s.spin, env=shell)
    assert code == 0, (err, report)
    assert any("recorded in the outputs' produced_by" in n for n in report["notes"])
    code, report, err = replay(settings, "--loop", s.spin, "--current-settings", env=shell)
    assert code == 6, (err, report)
    assert all(d["explained"] for d in report["differences"])
    assert all("detection.profile" in d["explanation"] for d in report["differences"])


def test_a_time_range_rebuilds_the_loops_that_began_before_it(recorded):
    settings, s = recorded
    since = datetime.fromtimestamp(s.middle_ms / 1000, UTC).isoformat()
    code, report, err = replay(settings, "--since", since)
    assert code == 0, (err, report)
    loops = {row["loop_id"]: row for row in report["loops"]}
    assert loops[s.spin]["inputs"] == 3  # only the second half is audited …
    assert loops[s.spin]["matched"] >= 3  # … and the streak that began before it counts
    assert any("state rebuilt" in note and "before the range" in note for note in report["notes"])

    code, report, _ = replay(settings, "--since", since, "--rebuild", "none")
    assert code == 6
    different = {d["loop_id"] for d in report["differences"]}
    assert s.spin in different
    assert all(d["explained"] for d in report["differences"])
    assert all("not rebuilt" in d["explanation"] for d in report["differences"])


def test_one_loop_and_an_offset_range(recorded):
    settings, s = recorded
    audit_topic = f"{settings.topics.warnings}-audit"
    code, report, err = replay(settings, "--loop", s.spin, "--emit-to", audit_topic)
    assert code == 0, (err, report)
    assert {row["loop_id"] for row in report["loops"]} == {s.spin}
    assert report["totals"]["inputs"] == 5
    emitted = asyncio.run(read_all(settings, audit_topic))
    assert len(emitted) == report["totals"]["reproduced"] >= 4
    assert {o["loop_id"] for o in emitted} == {s.spin}

    # the other loops (and the task) may hash to the spin's partition, and a record may
    # carry several events: compare the range from offset 1 with the whole partition
    partition = default_partition(s.spin.encode(), settings.topics.partitions)
    inputs, rebuilt = {}, {}
    for first in (0, 1):
        code, report, err = replay(
            settings, "--offsets", f"{partition}:{first}-", "--input", "actions"
        )
        assert code == 0, (err, report)
        assert report["totals"]["matched"] >= 1
        inputs[first] = report["totals"]["inputs"]
        note = next(n for n in report["notes"] if n.startswith("state rebuilt"))
        found = re.search(r"(\d+) event\(s\) of \d+ loop\(s\) in (\d+) record\(s\)", note)
        assert found, note
        rebuilt[first] = (int(found[1]), int(found[2]))
    assert rebuilt[0] == (0, 0)
    events_at_offset_0, records = rebuilt[1]
    assert records == 1 and events_at_offset_0 >= 1  # offset 0 of that partition is history
    assert inputs[1] == inputs[0] - events_at_offset_0


def test_a_loop_with_nothing_recorded_is_not_an_agreement(recorded):
    """Issue 72.7: an audit of a loop id with no event said AGREE and exited 0."""
    settings, _ = recorded
    code, report, err = replay(settings, "--loop", "no-such-loop-xyz")
    assert code == 5, (err, report)
    assert report["empty"] is True and report["agree"] is False
    assert report["totals"]["inputs"] == 0
    run = subprocess.run(
        [sys.executable, "-m", "loopwarden", "replay", "--no-progress", "--loop", "nope"],
        env={**os.environ, **settings_env(settings)},
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 5 and b"NOTHING AUDITED" in run.stdout, run.stderr[-2000:]


def test_a_changed_threshold_reports_exactly_what_would_differ(recorded):
    settings, s = recorded
    code, report, err = replay(settings, "--loop", s.spin, "--set", "detection.spin_threshold=4")
    assert code == 6, (err, report)
    by_status: dict[str, set[str]] = {}
    for d in report["differences"]:
        by_status.setdefault(d["status"], set()).add(d["output_id"])
        assert d["explained"] and "detection.spin_threshold 3 → 4" in d["explanation"]
    third, fourth, fifth = s.spin_events[2:5]
    spin_id = derived_id("action_type_spin", s.spin, third)
    check_third = derived_id("semantic_spin_check", s.spin, third)
    check_fourth = derived_id("semantic_spin_check", s.spin, fourth)
    assert {spin_id, check_third} <= by_status["unexpected"]  # fired at 3, would not at 4
    assert check_fourth in by_status["missing"]  # would have fired at 4
    assert derived_id("action_type_spin", s.spin, fourth) in by_status["changed"]
    assert derived_id("action_type_spin", s.spin, fifth) in by_status["changed"]


def test_a_session_with_a_worker_killed_and_restarted_replays_identically(broker, worker_factory):
    settings = isolated_settings(broker, "audit-kill", REPLAYABLE)
    settings = settings.model_copy(
        update={"analyst": settings.analyst.model_copy(update={"enabled": False})}
    )
    worker = worker_factory(settings, "first")
    loops = [f"kill-{i}" for i in range(20)]

    async def session() -> None:
        async with AsyncPublisher(settings) as publisher:
            for round_ in range(40):
                for loop in loops:
                    action = "search" if round_ % 5 else "read"
                    await publisher.publish(loop, action, params={"round": round_ // 7})
            await publisher.flush()
            topics = [settings.topics.warnings]
            async with TopicRangeReader(settings.kafka.bootstrap_servers) as reader:
                deadline = time.monotonic() + 60
                while True:  # the worker has written some warnings: kill it mid-stream
                    bounds = await reader.bounds(topics[0], await reader.partitions(topics[0]))
                    if sum(end for _, end in bounds.values()) >= 20:
                        break
                    assert time.monotonic() < deadline
                    await asyncio.sleep(0.05)
            worker.kill()
            worker_factory(settings, "second")
            for loop in loops:  # and more after the restart
                await publisher.publish(loop, "search", params={"round": 99})
            await publisher.flush()
        await processed_everything(settings)

    asyncio.run(session())
    code, report, err = replay(settings)
    assert code == 0, (err, report)
    assert report["totals"]["inputs"] == 20 * 41
    assert report["totals"]["matched"] > 20


def test_a_loop_idle_longer_than_the_ttl_is_decided_alike_live_in_detect_and_in_replay(
    broker, worker_factory, tmp_path
):
    settings = isolated_settings(broker, "audit-ttl", REPLAYABLE, idle_loop_ttl_s=60)
    settings = settings.model_copy(
        update={"analyst": settings.analyst.model_copy(update={"enabled": False})}
    )
    worker_factory(settings)
    loop = f"ttl-{uuid.uuid4().hex[:6]}"
    t0 = time.time() - 600
    times = [t0, t0 + 1, t0 + 100, t0 + 101, t0 + 102]  # a gap over the TTL after two
    events = [
        {
            "event_id": f"{loop}-{i}",
            "loop_id": loop,
            "occurred_at": at,
            "payload": {"action_type": "search"},
        }
        for i, at in enumerate(times)
    ]

    async def live() -> list[str]:
        async with AsyncPublisher(settings, batching=False) as publisher:
            for event in events:
                publisher.publish_event(event)
            await publisher.flush()
        await processed_everything(settings)
        from loopwarden.streams.client.subscriber import WarningSubscriber

        async with WarningSubscriber(settings, loop_id=loop, from_beginning=True) as warnings:
            received = await warnings.collect(1, 30)
            received += await warnings.collect(1, 1)
        return [w.trigger_event_id for w in received]

    live_triggers = asyncio.run(live())
    source = tmp_path / "events.jsonl"
    source.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    detected = subprocess.run(
        [sys.executable, "-m", "loopwarden", "detect", str(source)],
        env={**os.environ, **settings_env(settings)},
        capture_output=True,
        timeout=60,
        check=True,
    )
    detect_triggers = [
        orjson.loads(line)["trigger_event_id"] for line in detected.stdout.splitlines()
    ]
    assert live_triggers == detect_triggers == [f"{loop}-4"]  # c, d, e after the gap
    code, report, err = replay(settings, "--loop", loop)
    assert code == 0, (err, report)
    assert report["totals"]["matched"] >= 1


def test_tail_follows_every_output_topic_at_once(recorded):
    settings, s = recorded
    last = rerun_loop_id(s.family, 2)
    args = ["tail", "--topic", "all", "--loop", last, "--from-beginning", "--format", "json"]
    run = subprocess.run(
        [sys.executable, "-m", "loopwarden", *args, "--limit", "4", "--timeout", "60"],
        env={**os.environ, **settings_env(settings)},
        capture_output=True,
        timeout=90,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    items = [orjson.loads(line) for line in run.stdout.splitlines()]
    assert sorted(i["type"] for i in items) == ["rerun_decision"] * 3 + ["warning"]
    assert {i["loop_id"] for i in items if i["type"] == "warning"} == {last}
