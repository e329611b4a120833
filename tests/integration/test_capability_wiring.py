"""Each capability's Faust wiring, in process, on the real broker (no worker subprocess).

The app is the worker's own (:func:`build_worker_app`, one role at a time); a
recording :class:`OutputSink` attached to its router sees every named output the
capability emits, and the client reads the same outputs from their topics: the
capability's input topic, its agent, the generic runner and the router's routes
are all exercised. Behaviour in depth is the subprocess tests' and the unit tests'.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web
from loopback_http import ScriptedEndpoint, serving_post
from output_recording import Recording

from loopwarden.agents.capabilities import CAPABILITIES
from loopwarden.agents.experience.agent import experience_store
from loopwarden.agents.experience.declaration import OPEN_TASKS
from loopwarden.agents.memory.shared import shared_memory
from loopwarden.schemas.warnings import WarningKind
from loopwarden.settings import Settings
from loopwarden.settings.outputs import WebhookSettings
from loopwarden.streams.client.json_subscribers import (
    AnalysisSubscriber,
    DecisionSubscriber,
    MemoryOutcomeSubscriber,
)
from loopwarden.streams.client.publisher import AsyncPublisher
from loopwarden.streams.client.subscriber import DeadLetterSubscriber, WarningSubscriber
from loopwarden.streams.client.tasks import (
    publish_task_event,
    start_task,
    task_end_event,
    task_start_event,
)

from .conftest import isolated_settings
from .inprocess import running_app
from .otlp_payloads import otlp_proto, tool_span

pytestmark = pytest.mark.integration
TIMEOUT = 60


def only(broker, name: str, *roles: str, **changes: Any) -> Settings:
    settings = isolated_settings(broker, name)
    return settings.model_copy(update={"roles": frozenset(roles), **changes})


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


async def test_the_monitor_routes_its_warning_to_the_topic_and_the_sinks(broker):
    settings = only(broker, "wire-monitor", "monitor")
    loop_id = unique("spin")
    async with running_app(settings) as app:
        assert {a.rsplit(".", 1)[-1] for a in app.agents} == {"monitor_actions"}
        recording = Recording("warnings", "reflection_requests")
        app.outputs.attach(recording)
        async with WarningSubscriber(settings, loop_id=loop_id) as warnings:
            async with AsyncPublisher(settings) as publisher:
                ids = [await publisher.publish(loop_id, "web_search") for _ in range(3)]
            (warning,) = await warnings.collect(1, TIMEOUT)
    assert warning.kind is WarningKind.ACTION_TYPE_SPIN
    assert warning.event_ids == ids
    (delivered,) = recording.of("warnings")
    assert delivered["warning_id"] == warning.warning_id
    assert [r["loop_id"] for r in recording.of("reflection_requests")] == [loop_id]


async def test_the_guardrails_route_decisions_by_family(broker):
    settings = only(broker, "wire-guardrails", "guardrails")
    family = unique("fam")
    async with running_app(settings) as app:
        recording = Recording("decisions")
        app.outputs.attach(recording)
        async with DecisionSubscriber(settings, loop_id=family) as decisions:
            async with AsyncPublisher(settings) as publisher:
                await publisher.complete_loop(family, 0.9, 0.1)
            (decision,) = await decisions.collect(1, TIMEOUT)
    assert decision["family_id"] == family
    assert [d["decision_id"] for d in recording.of("decisions")] == [decision["decision_id"]]


async def test_the_memory_agent_answers_a_write_with_its_outcome(broker):
    settings = only(broker, "wire-memory", "memory")
    scope = unique("scope")
    async with running_app(settings) as app:
        recording = Recording("memory_outcomes")
        app.outputs.attach(recording)
        async with MemoryOutcomeSubscriber(settings, scope=scope) as outcomes:
            async with AsyncPublisher(settings) as publisher:
                await publisher.remember("the build needs make", event_id=f"{scope}-1", scope=scope)
            (outcome,) = await outcomes.collect(1, TIMEOUT)
    assert outcome["scope"] == scope
    assert [o["scope"] for o in recording.of("memory_outcomes")] == [scope]


async def test_otlp_spans_become_actions_the_monitor_warns_on(broker):
    settings = only(broker, "wire-otlp", "otlp", "monitor")
    conversation = unique("conv")
    async with running_app(settings) as app:
        recording = Recording("actions")
        app.outputs.attach(recording)
        async with WarningSubscriber(settings, loop_id=conversation) as warnings:
            async with AsyncPublisher(settings, topic=settings.topics.otlp_spans) as spans:
                for n in range(3):
                    span = tool_span("grep", conversation, call_id=f"c{n}")
                    await spans.send_raw(otlp_proto(span))
            (warning,) = await warnings.collect(1, TIMEOUT)
    assert warning.kind is WarningKind.ACTION_TYPE_SPIN
    assert {a["loop_id"] for a in recording.of("actions")} == {conversation}  # plain JSON
    assert len(recording.of("actions")) == 3


async def test_the_experience_agent_answers_a_task_start_with_advice(broker):
    settings = only(broker, "wire-experience", "experience")
    loop_id = unique("task")
    async with running_app(settings) as app:
        recording = Recording("advice")
        app.outputs.attach(recording)
        async with AsyncPublisher(settings) as publisher:
            advice = await start_task(publisher, loop_id, "book a table for two", timeout_s=TIMEOUT)
    assert advice.loop_id == loop_id
    assert [a["loop_id"] for a in recording.of("advice")] == [loop_id]


async def test_a_warning_reaches_the_webhook_after_a_failed_post(broker):
    hook = ScriptedEndpoint(503)
    async with serving_post("/hook", hook.handle) as base:
        webhook = WebhookSettings(url=f"{base}/hook", token="t0ken", retry_initial_s=0.05)
        settings = only(broker, "wire-webhook", "monitor", webhook=webhook)
        loop_id = unique("hooked")
        async with running_app(settings) as app:
            async with WarningSubscriber(settings, loop_id=loop_id) as warnings:
                async with AsyncPublisher(settings) as publisher:
                    for _ in range(3):
                        await publisher.publish(loop_id, "read_file")
                (warning,) = await warnings.collect(1, TIMEOUT)
            sink = app.output_sinks["webhook"]
            assert sink in app.outputs.sinks("warnings")
            await sink.idle.wait()  # cleared when the warning was handed over
    assert hook.answered == [503, 200]
    body = hook.received[-1]
    assert [o["output"] for o in body["outputs"]] == ["warnings"]
    assert body["outputs"][0]["value"]["warning_id"] == warning.warning_id
    assert hook.auth == ["Bearer t0ken", "Bearer t0ken"]  # the 503, then the retry
    assert sink.delivered == 1
    assert not sink.dropped


async def test_a_sink_of_the_users_own_receives_the_warning(broker, tmp_path, monkeypatch, caplog):
    """examples/jsonl_sink.py, named in the ``sinks`` setting: nothing in loopwarden is
    edited, and the worker hands it the warning as it queues the Kafka record; its log
    says which sinks it attached (it did not)."""
    caplog.set_level(logging.INFO, logger="loopwarden.worker")
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2] / "examples"))
    monkeypatch.setenv("WARNINGS_FILE", str(tmp_path / "warnings.jsonl"))
    settings = only(broker, "wire-own-sink", "monitor", sinks=("jsonl_sink:warnings_to_file",))
    loop_id = unique("own-sink")
    async with running_app(settings) as app:
        sink = app.output_sinks["jsonl_sink:warnings_to_file"]
        assert sink in app.outputs.sinks("warnings")
        said = [r.getMessage() for r in caplog.records if r.name == "loopwarden.worker"]
        assert "output sinks: jsonl_sink:warnings_to_file (warnings)" in said
        async with WarningSubscriber(settings, loop_id=loop_id) as warnings:
            async with AsyncPublisher(settings) as publisher:
                for _ in range(3):
                    await publisher.publish(loop_id, "read_file")
            (warning,) = await warnings.collect(1, TIMEOUT)
    lines = [orjson.loads(line) for line in (tmp_path / "warnings.jsonl").read_bytes().splitlines()]
    assert [(line["output"], line["warning_id"]) for line in lines] == [
        ("warnings", warning.warning_id)
    ]


async def test_the_analyst_answers_requests_and_dead_letters_a_bad_one(broker):
    settings = only(broker, "wire-analyst", "monitor", "analyst")
    loop_id = unique("analysed")
    async with running_app(settings) as app:
        recording = Recording("reflections", "loop_completions")
        app.outputs.attach(recording)
        async with (
            AnalysisSubscriber(settings, loop_id=loop_id) as analyses,
            DeadLetterSubscriber(settings, loop_id=loop_id) as letters,
        ):
            async with AsyncPublisher(settings, topic=settings.topics.reflection_requests) as raw:
                await raw.send_raw(b'{"loop_id": 1}', loop_id.encode())
            async with AsyncPublisher(settings) as publisher:
                for _ in range(3):
                    await publisher.publish(loop_id, "web_search", params={"q": "same"})
            (analysis,) = await analyses.collect(1, TIMEOUT)
            (letter,) = await letters.collect(1, TIMEOUT)
    assert analysis["analysis"] == "heuristic"  # no model configured
    assert [r["reflection_id"] for r in recording.of("reflections")] == [analysis["reflection_id"]]
    assert [c["type"] for c in recording.of("loop_completions")] == ["reflection_cached"]
    assert letter.reason == "validation" and "loop_id" in letter.message
    assert letter.source.topic == settings.topics.reflection_requests


def test_every_capability_with_an_input_topic_has_a_wiring_test_here():
    tested = {"monitor", "guardrails", "memory", "otlp", "experience", "analyst"}
    # the hooks' wiring is test_claude_code_hooks' (an HTTP endpoint, no input topic), the
    # fleet's test_fleet_delegation's and test_fleet_worker's (a framework end to end, a worker)
    elsewhere = {"hooks", "fleet"}
    assert {c.role for c in CAPABILITIES} == tested | elsewhere


async def test_the_memory_judge_is_asked_outside_the_storage_lock(broker):
    lock_held: list[bool] = []
    holder: dict[str, Any] = {}

    async def judge(request: web.Request) -> web.Response:
        lock_held.append(shared_memory(holder["app"].resources).lock.locked())
        answer = {"label": "contradicts", "confidence": 0.9, "reason": "count changed"}
        message = {"role": "assistant", "content": orjson.dumps(answer).decode()}
        return web.json_response({"choices": [{"index": 0, "message": message}]})

    async with serving_post("/v1/chat/completions", judge) as base:
        settings = only(broker, "wire-judge", "memory")
        analyst = settings.analyst.model_copy(update={"base_url": f"{base}/v1"})
        settings = settings.model_copy(update={"analyst": analyst})
        scope = unique("judged")
        async with running_app(settings) as app:
            holder["app"] = app
            async with MemoryOutcomeSubscriber(settings, scope=scope) as outcomes:
                async with AsyncPublisher(settings) as publisher:
                    await publisher.remember(
                        "The staging cluster has three nodes", event_id=f"{scope}-1", scope=scope
                    )
                    (first,) = await outcomes.collect(1, TIMEOUT)
                    await publisher.remember(
                        "The staging cluster does not have three nodes",
                        event_id=f"{scope}-2",
                        scope=scope,
                    )
                (second,) = await outcomes.collect(1, TIMEOUT)
    assert first["status"] == "stored"
    assert second["conflicts"][0]["reason"] == "model: count changed"
    assert lock_held == [False]


def with_task_ttl(settings: Settings, ttl_s: float) -> Settings:
    """Open tasks idle past ``ttl_s`` reclaimed, swept every 0.2 s with 0.1 s of grace."""
    experience = settings.experience.model_copy(update={"task_ttl_s": ttl_s})
    limits = settings.limits.model_copy(
        update={"expiry_sweep_interval_s": 0.2, "max_clock_skew_s": 0.1}
    )
    return settings.model_copy(update={"experience": experience, "limits": limits})


async def test_an_open_task_idle_past_its_ttl_is_dropped(broker):
    settings = with_task_ttl(only(broker, "wire-task-ttl", "experience"), 1.0)
    loop_id = unique("idle-task")
    async with running_app(settings) as app:
        async with AsyncPublisher(settings) as publisher:
            await start_task(publisher, loop_id, "book a table for two", timeout_s=TIMEOUT)
        table = app.tables[OPEN_TASKS.table]
        assert loop_id.encode() in table.data  # open, with the advice it got
        deadline = asyncio.get_running_loop().time() + TIMEOUT
        while loop_id.encode() in table.data:  # its partition is quiet: the wall clock's sweep
            assert asyncio.get_running_loop().time() < deadline, "the idle task stayed"
            await asyncio.sleep(0.1)


async def test_a_backlog_older_than_the_task_ttl_is_learnt_whole(broker):
    """Open tasks expire in event time, as loops do: a worker reading a backlog dated an
    hour back (after an outage) keeps a task open while its steps arrive, and its end
    teaches the whole run. (Swept on the wall clock, the task was dropped between two of
    its steps: the rest and the end found no task and nothing was learnt.)"""
    settings = with_task_ttl(only(broker, "wire-task-backlog", "experience"), 1.0)
    loop_id, steps = unique("backlog-task"), 8
    an_hour_ago = time.time() - 3600
    async with running_app(settings) as app:
        async with AsyncPublisher(settings) as publisher:
            start = task_start_event(loop_id, "book a table for two")
            publish_task_event(publisher, start.model_copy(update={"occurred_at": an_hour_ago}))
            await publisher.flush()  # queued: sent before the first step
            for n in range(steps):  # read over several sweeps of the wall clock
                await publisher.publish(
                    loop_id, "search", params={"q": f"table {n}"}, occurred_at=an_hour_ago + n
                )
                await publisher.flush()
                await asyncio.sleep(0.3)  # the backlog's pace, not a wait for the worker
            end = task_end_event(loop_id, True)
            publish_task_event(
                publisher, end.model_copy(update={"occurred_at": an_hour_ago + steps})
            )
            await publisher.flush()
        store = experience_store(app.resources)
        deadline = asyncio.get_running_loop().time() + TIMEOUT
        while True:
            learnt = [
                r for r in store.table.all(["loop_id", "recorded_steps"]) if r["loop_id"] == loop_id
            ]
            if learnt:
                break
            assert asyncio.get_running_loop().time() < deadline, "the run was not learnt"
            await asyncio.sleep(0.2)
    assert learnt[0]["recorded_steps"] == steps
