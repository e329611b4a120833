"""The one OpenAI-compatible client against a loopback chat-completions server (aiohttp)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from aiohttp import web
from loopback_http import serving_post

from loopwarden.agents.analyst.llm import ModelVerdict, VerdictClient
from loopwarden.agents.llm import ModelEndpoint, StructuredChat
from loopwarden.agents.memory.judge import Judgement
from loopwarden.errors import ModelEndpointError
from loopwarden.streams.tools.broker import free_port

VERDICT = {"is_spinning": True, "reason": "r", "suggestions": ["s"], "next_actions": ["n"]}


def completion(content: str) -> dict[str, Any]:
    return {
        "id": "c1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
    }


class Model:
    """Answers with the next of ``replies``: a status and a JSON body, or 'slow'."""

    def __init__(self, *replies: Any) -> None:
        self.replies = list(replies)
        self.requests: list[tuple[dict[str, Any], str | None]] = []

    async def handle(self, request: web.Request) -> web.Response:
        self.requests.append((await request.json(), request.headers.get("Authorization")))
        reply = self.replies.pop(0)
        if reply == "slow":
            await asyncio.sleep(3)
            reply = (200, completion(orjson.dumps(VERDICT).decode()))
        status, body = reply
        return web.json_response(body, status=status)


@contextlib.asynccontextmanager
async def serving(model: Model) -> AsyncIterator[ModelEndpoint]:
    async with serving_post("/v1/chat/completions", model.handle) as base:
        yield ModelEndpoint(f"{base}/v1", "m", "k-1", timeout_s=1.0)


async def test_a_verdict_is_asked_with_the_models_strict_schema_and_validated():
    model = Model((200, completion(orjson.dumps(VERDICT).decode())))
    async with serving(model) as endpoint:
        client = VerdictClient(endpoint)
        verdict = await client.verdict("is it spinning?")
        await client.close()
    assert verdict == ModelVerdict(**VERDICT)
    body, auth = model.requests[0]
    assert auth == "Bearer k-1"
    assert body["temperature"] == 0 and body["messages"][-1]["content"] == "is it spinning?"
    schema = body["response_format"]["json_schema"]
    assert schema["strict"] is True
    assert schema["schema"]["required"] == ["is_spinning", "reason", "suggestions", "next_actions"]
    assert schema["schema"]["properties"]["reason"]["description"] == "如果发生了 SPIN，说明原因"


@pytest.mark.parametrize(
    ("reply", "message", "retriable"),
    [
        ((200, completion("I think it is fine")), "not a valid verdict", False),
        ((200, completion('{"reason": 1}')), "not a valid verdict", False),
        ((200, {**completion(""), "choices": []}), "not a valid verdict", False),
        ((400, {"error": {"message": "bad"}}), "answered HTTP 400", False),
        ((429, {"error": {"message": "slow down"}}), "answered HTTP 429", True),
        ((503, {"error": {"message": "busy"}}), "answered HTTP 503", True),
        ("slow", "timed out after 1.0s", True),
    ],
)
async def test_each_failure_says_what_it_was_and_whether_to_retry(reply, message, retriable):
    async with serving(Model(reply)) as endpoint:
        chat = StructuredChat(endpoint)
        with pytest.raises(ModelEndpointError, match=message) as raised:
            await chat.ask("system", "user", ModelVerdict, "verdict")
        await chat.close()
    assert raised.value.retriable is retriable


async def test_an_unreachable_endpoint_is_retriable():
    chat = StructuredChat(ModelEndpoint(f"http://127.0.0.1:{free_port()}/v1", "m"))
    with pytest.raises(ModelEndpointError, match="unreachable") as raised:
        await chat.ask("system", "user", ModelVerdict, "verdict")
    assert raised.value.retriable


async def test_the_blocking_call_validates_the_same_way():
    judgement = {"label": "supersedes", "confidence": 0.9, "reason": "newer"}
    model = Model((200, completion(orjson.dumps(judgement).decode())), (200, completion("{}")))
    async with serving(model) as endpoint:
        chat = StructuredChat(endpoint)
        answer = await asyncio.to_thread(chat.ask_blocking, "s", "u", Judgement, "judgement")
        with pytest.raises(ModelEndpointError, match="not a valid judgement"):
            await asyncio.to_thread(chat.ask_blocking, "s", "u", Judgement, "judgement")
        await chat.close()
    assert answer == Judgement(**judgement)
