"""``loopwarden gateway`` between the official SDKs and a scripted model that makes the
agent run the same failing command again and again: every API (Chat Completions,
Responses, Anthropic Messages), streamed and not. The agent reads the warning in the
very request after its 4th identical failure, and at the ladder's end is answered in
the model's place (the model never sees that request); its API key reaches the model and
no topic; the usage the model reported is on the published steps. With no broker, the
gateway forwards every request unchanged."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import orjson
import pytest
from deferred import deferred
from gateway_process import GatewayProcess
from scripted_model import COMMAND, USAGE_IN, USAGE_OUT, ScriptedModel

from loopwarden.schemas.tool_calls import CONTEXT_HEADER, STOP_HEADER
from loopwarden.settings import DetectionSettings, Settings
from loopwarden.streams.tools.broker import free_port
from loopwarden.streams.tools.replay_reader import TopicRangeReader

from .adapter_harness import STOP_AT, WARN_AT

anthropic = deferred("anthropic")
openai = deferred("openai")

pytestmark = pytest.mark.integration

SECRET = "sk-test-gateway-" + uuid.uuid4().hex
FAILURE = "FAILED tests/test_login.py::test_login - AssertionError: expected 200, got 500"
SCHEMA = {"type": "object", "properties": {"command": {"type": "string"}}}


@pytest.fixture(scope="module")
def stack(laddered, tmp_path_factory) -> Iterator[tuple[Settings, ScriptedModel, GatewayProcess]]:
    settings, _ = laddered
    adapters = settings.adapters.model_copy(update={"verdict_wait_ms": 10_000})
    settings = settings.model_copy(update={"adapters": adapters})
    log = str(tmp_path_factory.mktemp("gateway") / "gateway.log")
    with ScriptedModel() as model:
        gateway = GatewayProcess(settings, model.url, log)
        try:
            gateway.wait_ready(broker=True)
            yield settings, model, gateway
        finally:
            gateway.stop()


def run_chat(url: str, task: str, stream: bool) -> tuple[str, int]:
    client = openai.OpenAI(base_url=f"{url}/v1", api_key=SECRET, max_retries=0)
    tools = [{"type": "function", "function": {"name": "run_command", "parameters": SCHEMA}}]
    messages: list[dict] = [
        {"role": "system", "content": "You fix failing tests."},
        {"role": "user", "content": task},
    ]
    for requests in range(1, 3 * STOP_AT):
        if stream:
            with client.chat.completions.stream(
                model="scripted", messages=messages, tools=tools
            ) as s:
                final = s.get_final_completion()
            message = final.choices[0].message
        else:
            message = (
                client.chat.completions.create(model="scripted", messages=messages, tools=tools)
                .choices[0]
                .message
            )
        if not message.tool_calls:
            return message.content or "", requests
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            assert orjson.loads(call.function.arguments)["command"] == COMMAND
            messages.append({"role": "tool", "tool_call_id": call.id, "content": FAILURE})
    raise AssertionError("the agent was never stopped")


def run_responses(url: str, task: str, stream: bool) -> tuple[str, int]:
    client = openai.OpenAI(base_url=f"{url}/v1", api_key=SECRET, max_retries=0)
    tools = [{"type": "function", "name": "run_command", "parameters": SCHEMA}]
    items: list[dict] = [{"role": "user", "content": task}]
    for requests in range(1, 3 * STOP_AT):
        kwargs = {"model": "scripted", "instructions": "You fix failing tests.", "input": items,
                  "tools": tools}  # fmt: skip
        if stream:
            with client.responses.stream(**kwargs) as s:
                response = s.get_final_response()
        else:
            response = client.responses.create(**kwargs)
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            return response.output_text, requests
        for call in calls:
            items.append(call.model_dump(exclude_none=True))
            items.append(
                {"type": "function_call_output", "call_id": call.call_id, "output": FAILURE}
            )
    raise AssertionError("the agent was never stopped")


def run_anthropic(url: str, task: str, stream: bool) -> tuple[str, int]:
    client = anthropic.Anthropic(base_url=url, api_key=SECRET, max_retries=0)
    tools = [{"name": "run_command", "input_schema": SCHEMA}]
    messages: list[dict] = [{"role": "user", "content": task}]
    for requests in range(1, 3 * STOP_AT):
        kwargs = {"model": "scripted", "max_tokens": 256, "system": "You fix failing tests.",
                  "messages": messages, "tools": tools}  # fmt: skip
        if stream:
            with client.messages.stream(**kwargs) as s:
                message = s.get_final_message()
        else:
            message = client.messages.create(**kwargs)
        uses = [block for block in message.content if block.type == "tool_use"]
        if not uses:
            return "".join(b.text for b in message.content if b.type == "text"), requests
        messages.append({"role": "assistant", "content": [b.model_dump() for b in message.content]})
        results = [{"type": "tool_result", "tool_use_id": u.id, "content": FAILURE,
                    "is_error": True} for u in uses]  # fmt: skip
        messages.append({"role": "user", "content": results})
    raise AssertionError("the agent was never stopped")


AGENTS = {"chat": run_chat, "responses": run_responses, "messages": run_anthropic}
FIRST_WARNED = {
    "chat": WARN_AT,
    "responses": WARN_AT,
    "messages": DetectionSettings().repeat_failure_count,
}
"""The request whose steps bring the first warning: the 4th identical result, or (the
Anthropic agent marks its failures ``is_error``) the 3rd identical failure."""


async def topic_bytes(settings: Settings, topic: str) -> list[bytes]:
    """Every record value of ``topic``, to its true end."""
    async with TopicRangeReader(settings.kafka.bootstrap_servers) as reader:
        return [r.value or b"" async for batch in reader.read(await reader.whole(topic))
                for r in batch]  # fmt: skip


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("api", list(AGENTS))
def test_an_agent_on_each_api_is_warned_on_time_and_stopped_in_the_models_place(stack, api, stream):
    _, model, gateway = stack
    before = len(model.seen)
    task = f"Fix the login tests ({api}, {uuid.uuid4().hex[:8]})"
    text, requests = AGENTS[api](gateway.url, task, stream)
    assert text.startswith(STOP_HEADER), text
    seen = [s for s in model.seen[before:] if s.api == api]
    assert len(seen) == requests - 1, "the stop was answered by the gateway: no model call"
    assert all(s.headers.get("authorization", s.headers.get("x-api-key", "")).endswith(SECRET)
               for s in seen), "the client's own key reaches the model"  # fmt: skip
    noted = [n for n, s in enumerate(seen) if CONTEXT_HEADER in s.instructions]
    first = FIRST_WARNED[api]
    assert noted and noted[0] == first, f"first note in request {noted[:1]}, not {first}"
    assert requests <= STOP_AT + 1, f"stopped after {requests} requests"


def test_no_topic_holds_the_api_key_and_the_steps_carry_the_models_usage(stack):
    settings, _, gateway = stack
    run_chat(gateway.url, f"Fix the login tests (usage, {uuid.uuid4().hex[:8]})", False)
    for topic in (settings.topics.actions, settings.topics.warnings, settings.topics.verdicts):
        values = asyncio.run(topic_bytes(settings, topic))
        assert values and not any(SECRET.encode() in value for value in values), topic
    events = [
        e for v in asyncio.run(topic_bytes(settings, settings.topics.actions))
        for e in (lambda d: d if isinstance(d, list) else [d])(orjson.loads(v))
    ]  # fmt: skip
    usage = [e["payload"].get("resource_usage") for e in events if e.get("payload")]
    assert {"input_tokens": USAGE_IN, "output_tokens": USAGE_OUT,
            "total_tokens": USAGE_IN + USAGE_OUT} in usage  # fmt: skip
    status = gateway.status()
    assert status["counts"]["stopped"] >= 1 and status["counts"].get("failed", 0) == 0


def test_with_no_broker_every_request_is_forwarded_unchanged(tmp_path):
    settings = Settings().namespaced(f"gw-down-{uuid.uuid4().hex[:6]}",
                                     bootstrap_servers=f"127.0.0.1:{free_port()}")  # fmt: skip
    with ScriptedModel() as model:
        gateway = GatewayProcess(settings, model.url, str(tmp_path / "gateway.log"))
        try:
            gateway.wait_ready(broker=False)
            client = openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=SECRET, max_retries=0)
            body = {"model": "scripted", "messages": [{"role": "user", "content": "hi"}]}
            for _ in range(3):
                answer = client.chat.completions.create(**body)
                assert answer.choices[0].message.tool_calls, "the model's own answer"
            assert [s.body for s in model.seen] == [body] * 3, "forwarded unchanged"
            counts = gateway.status()["counts"]
            assert counts["requests"] == 3 and counts["unwatched"] == 3
        finally:
            gateway.stop()
