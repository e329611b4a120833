"""The analyst against a loopback server speaking OpenAI chat-completions.

A good answer is used; a malformed answer and a timeout fall back to the
heuristics and say so; the worker never hangs. Without a server the worker
analyses with heuristics, and the loop family's status shows the reflections.
"""

from __future__ import annotations

import asyncio
import uuid

import aiohttp
import orjson
import pytest
from aiohttp import web
from loopback_http import serving_post
from pydantic import SecretStr

from loopwarden.streams.client.json_subscribers import AnalysisSubscriber
from loopwarden.streams.client.publisher import AsyncPublisher
from loopwarden.streams.client.subscriber import WarningSubscriber
from loopwarden.streams.tools.broker import free_port

from .conftest import http_call, isolated_settings

pytestmark = pytest.mark.integration


class FakeModel:
    """Answers by the mode named in the prompt: good, malformed or slow."""

    def __init__(self) -> None:
        self.requests: list[dict] = []

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append({"body": body, "auth": request.headers.get("Authorization")})
        prompt = body["messages"][-1]["content"]
        if "mode-slow" in prompt:
            await asyncio.sleep(5)
        if "mode-malformed" in prompt:
            content = "I think the agent is fine."
        else:
            content = orjson.dumps(
                {
                    "is_spinning": True,
                    "reason": "model: same query again",
                    "suggestions": ["ask the user"],
                    "next_actions": ["stop searching"],
                }
            ).decode()
        return web.json_response(
            {
                "id": "x",
                "object": "chat.completion",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
            }
        )


@pytest.fixture
async def model_server():
    model = FakeModel()
    async with serving_post("/v1/chat/completions", model.handle) as base:
        yield model, f"{base}/v1"


async def spin(publisher, loop_id, mode):
    for _ in range(3):
        await publisher.publish(loop_id, "web_search", params={"q": "notes", "m": f"mode-{mode}"})


async def test_model_answers_are_used_and_failures_fall_back(broker, worker_factory, model_server):
    model, base_url = model_server
    settings = isolated_settings(broker, "analyst", ["monitor", "analyst"])
    settings = settings.model_copy(
        update={
            "analyst": settings.analyst.model_copy(
                update={"base_url": base_url, "api_key": SecretStr("k-123"), "timeout_s": 1.0}
            )
        }
    )
    worker_factory(settings)
    tag = uuid.uuid4().hex[:6]
    loops = {mode: f"{mode}-{tag}" for mode in ("good", "malformed", "slow")}
    async with (
        AnalysisSubscriber(settings) as analyses,
        WarningSubscriber(settings, loop_id=loops["good"]) as warnings,
    ):
        async with AsyncPublisher(settings) as publisher:
            for mode, loop_id in loops.items():
                await spin(publisher, loop_id, mode)
        received = {}
        async for analysis in analyses:
            if analysis["kind"] == "semantic_spin_check":
                received[analysis["loop_id"]] = analysis
            if len(received) == 3:
                break
        logic = [w for w in await warnings.collect(2, 10) if w.kind == "logic_spin"]

    good = received[loops["good"]]
    assert (good["analysis"], good["reason"]) == ("model", "model: same query again")
    assert good["next_actions"] == ["stop searching"]
    assert "[SPIN DETECTED]" in good["timeline_message"]
    malformed = received[loops["malformed"]]
    assert malformed["analysis"] == "heuristic"
    assert "not a valid verdict" in malformed["fallback_reason"]
    assert malformed["is_spinning"]  # near-identical parameters
    slow = received[loops["slow"]]
    assert slow["analysis"] == "heuristic" and "timed out" in slow["fallback_reason"]
    assert logic and logic[0].reason == "model: same query again"
    # at the action that triggered the check, the 3rd of the loop (it said iteration 0)
    assert logic[0].iteration == 3
    sent = model.requests[0]
    assert sent["auth"] == "Bearer k-123"
    assert sent["body"]["response_format"]["json_schema"]["schema"]["required"] == [
        "is_spinning",
        "reason",
        "suggestions",
        "next_actions",
    ]


async def test_reflections_are_cached_in_the_guardrails_status(broker, worker_factory):
    port = free_port()
    settings = isolated_settings(broker, "cache", ["monitor", "analyst", "guardrails"]).model_copy(
        update={"web_port": port}
    )
    settings = settings.model_copy(
        update={"api": settings.api.model_copy(update={"overrides_enabled": False})}
    )
    worker_factory(settings)
    loop_id = f"cached-{uuid.uuid4().hex[:6]}"
    async with AsyncPublisher(settings) as publisher:
        for i in range(5):
            await publisher.publish(loop_id, "deploy", success=False, error_message=f"exit {i}")
    url = f"http://127.0.0.1:{port}/orchestrator/guardrails-status/{loop_id}"
    async with aiohttp.ClientSession() as session:
        for _ in range(100):
            status, body, _ = await http_call(session, "GET", url)
            cached = body.get("guardrails_status", {}).get("recent_reflections", [])
            reasons = [r["reason"] for r in cached]
            if status == 200 and len(cached) == 3 and "exit 4" in reasons:  # all analysed
                break
            await asyncio.sleep(0.2)
    assert status == 200, body
    # the last three by event time, the last failure among them
    assert [r["occurred_at"] for r in cached] == sorted(r["occurred_at"] for r in cached)
    assert cached[-1]["occurred_at"] == max(r["occurred_at"] for r in cached)
    assert "exit 4" in [r["reason"] for r in cached]
    assert {r["kind"] for r in cached} <= {"action_reflection", "semantic_spin_check"}
    assert all(r["analysis"] == "heuristic" for r in cached)
