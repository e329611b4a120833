"""The Pydantic AI capability with Pydantic AI's FunctionModel, a real worker and broker."""

from __future__ import annotations

import uuid

import pytest
from pydantic_ai import Agent
from pydantic_ai.exceptions import RunCancelled
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from loopwarden.adapters.calls import CONTEXT_HEADER
from loopwarden.adapters.pydantic_ai import Loopwarden

from .adapter_harness import (
    STOP_AT,
    WARN_AT,
    assert_no_warning_for,
    published_events,
)

pytestmark = pytest.mark.integration


def injected(messages) -> list[str]:
    return [
        part.content
        for message in messages
        for part in getattr(message, "parts", ())
        if part.part_kind == "user-prompt" and CONTEXT_HEADER in str(part.content)
    ]


def scripted(script, waits, requests):
    def respond(messages, info: AgentInfo) -> ModelResponse:
        requests.append(list(messages))
        wait = waits.get(len(requests) - 1)
        if wait is not None:
            assert wait(), f"no verdict before request {len(requests) - 1}"
        return script(len(requests) - 1)

    return FunctionModel(respond)


def lookup(query: str) -> str:
    """Look something up."""
    return f"nothing about {query}"


def test_a_spinning_agent_is_warned_in_its_next_request_then_cancelled(laddered):
    _, guard = laddered
    loop_id = f"pai-spin-{uuid.uuid4().hex[:6]}"
    requests: list = []
    waits = {
        WARN_AT: lambda: guard.inbox.wait(loop_id, count=1, timeout_s=60),
        STOP_AT: lambda: guard.inbox.wait(loop_id, stop=True, timeout_s=60),
    }

    def same_call(k: int) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart("lookup", {"query": "x"}, tool_call_id=f"c{k}")])

    capability = Loopwarden(guard)
    agent = Agent(scripted(same_call, waits, requests), tools=[lookup], capabilities=[capability])

    with pytest.raises(RunCancelled):
        agent.run_sync("find x", conversation_id=loop_id)

    assert all(not injected(request) for request in requests[: WARN_AT + 1])
    warning_text = injected(requests[WARN_AT + 1])
    assert len(warning_text) == 1 and "lookup" in warning_text[0]
    assert len(requests) == STOP_AT + 1, "the run went on past the stop"
    assert capability.stopped[loop_id].step == "stop"


def test_a_healthy_run_gets_nothing_and_failures_are_published(laddered):
    settings, guard = laddered
    loop_id = f"pai-ok-{uuid.uuid4().hex[:6]}"
    requests: list = []

    def plan(k: int) -> ModelResponse:
        if k < 3:
            call = ToolCallPart("lookup", {"query": f"q{k}"}, tool_call_id=f"t{k}")
            return ModelResponse(parts=[call])
        if k == 3:
            return ModelResponse(parts=[ToolCallPart("broken", {}, tool_call_id="t3")])
        return ModelResponse(parts=[TextPart("done")])

    def broken() -> str:
        """Always fails."""
        raise RuntimeError("disk full")

    agent = Agent(
        scripted(plan, {}, requests), tools=[lookup, broken], capabilities=[Loopwarden(guard)]
    )
    with pytest.raises(RuntimeError, match="disk full"):
        agent.run_sync("look things up", conversation_id=loop_id)

    assert all(not injected(request) for request in requests)
    assert_no_warning_for(guard, loop_id, settings)
    payloads = [event["payload"] for event in published_events(settings, loop_id, 4)]
    assert [p["action_type"] for p in payloads] == ["lookup"] * 3 + ["broken"]
    assert payloads[0]["params"] == {"query": "q0"} and payloads[0]["result"] == "nothing about q0"
    assert [p["tool_call_id"] for p in payloads] == ["t0", "t1", "t2", "t3"]
    assert payloads[3]["success"] is False and payloads[3]["error_message"] == "disk full"
