"""The LangChain v1 middleware with LangChain's fake chat model, a real worker and broker."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from deferred import deferred

from loopwarden.schemas.tool_calls import CONTEXT_HEADER, STOP_HEADER

from .adapter_harness import (
    AGENT_SAYS,
    PERSON_SAYS,
    STOP_AT,
    WARN_AT,
    assert_no_warning_for,
    assert_published_conversation,
    published_events,
    verdict_wait_after,
)

lc_agents = deferred("langchain.agents")
fakes = deferred("langchain_fakes")
lc_messages = deferred("langchain_core.messages")
lc_adapter = deferred("loopwarden.adapters.langchain")

pytestmark = pytest.mark.integration


def same_call(n: int) -> lc_messages.AIMessage:
    return lc_messages.AIMessage(
        "", tool_calls=[{"name": "search", "args": {"query": "x"}, "id": f"c{n}"}]
    )


def injected(request) -> list[str]:
    return [m.content for m in request if CONTEXT_HEADER in str(m.content)]


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])  # the sync and the async hooks
def test_a_spinning_agent_is_warned_in_its_very_next_request_then_stopped(
    laddered, mode, monkeypatch
):
    """No stand-in latency in the model: the middleware itself waits for the verdict on
    the call just made, and the note goes into the system message of that request
    only."""
    _, guard = laddered
    monkeypatch.setattr(guard, "verdict_wait_s", 0.0)
    loop_id = f"lc-spin-{mode}-{uuid.uuid4().hex[:6]}"
    model = fakes.ScriptedChatModel(
        messages=iter(same_call(n) for n in range(40)),
        requests=[],
        pace=lambda k: setattr(guard, "verdict_wait_s", verdict_wait_after(k + 1)),
    )
    agent = lc_agents.create_agent(
        model, [fakes.search], middleware=[lc_adapter.LoopwardenMiddleware(guard)]
    )
    config = {"configurable": {"thread_id": loop_id}, "recursion_limit": 200}

    task = {"messages": [{"role": "user", "content": "find x"}]}
    if mode == "invoke":
        result = agent.invoke(task, config)
    else:
        result = asyncio.run(agent.ainvoke(task, config))

    # request k follows call k: the 4th identical call's warning is in request 4
    before = [injected(request) for request in model.requests[:WARN_AT]]
    assert before == [[]] * WARN_AT, "warned before the spin"
    notes = [m for m in model.requests[WARN_AT] if CONTEXT_HEADER in str(m.content)]
    assert len(notes) == 1 and isinstance(notes[0], lc_messages.SystemMessage)
    assert "search" in notes[0].content
    # the stop came with the 10th call: the run ended before another request
    assert len(model.requests) == STOP_AT
    final = result["messages"][-1]
    assert isinstance(final, lc_messages.AIMessage) and final.content.startswith(STOP_HEADER)
    tool_calls = [m for m in result["messages"] if getattr(m, "tool_call_id", None)]
    assert len(tool_calls) == STOP_AT
    # the transcript kept no note: it went into the requests only
    assert not any(CONTEXT_HEADER in str(m.content) for m in result["messages"])


def test_a_healthy_run_gets_nothing(laddered):
    settings, guard = laddered
    loop_id = f"lc-ok-{uuid.uuid4().hex[:6]}"
    script = [
        lc_messages.AIMessage(
            "", tool_calls=[{"name": "search", "args": {"query": "shoes"}, "id": "a"}]
        ),
        lc_messages.AIMessage(
            "", tool_calls=[{"name": "fetch", "args": {"url": "https://x/1"}, "id": "b"}]
        ),
        lc_messages.AIMessage(
            "", tool_calls=[{"name": "search", "args": {"query": "boots"}, "id": "c"}]
        ),
        lc_messages.AIMessage(
            "", tool_calls=[{"name": "fetch", "args": {"url": "https://x/2"}, "id": "d"}]
        ),
        lc_messages.AIMessage("Boots at https://x/2."),
    ]
    model = fakes.ScriptedChatModel(messages=iter(script), requests=[], waits={})
    agent = lc_agents.create_agent(
        model, [fakes.search, fakes.fetch], middleware=[lc_adapter.LoopwardenMiddleware(guard)]
    )
    config = {"configurable": {"thread_id": loop_id}}

    result = agent.invoke({"messages": [{"role": "user", "content": "find boots"}]}, config)

    assert result["messages"][-1].content == "Boots at https://x/2."
    assert all(not injected(request) for request in model.requests)
    assert_no_warning_for(guard, loop_id, settings)
    events = published_events(settings, loop_id, 7)
    payloads = [event["payload"] for event in events]
    assert [p["action_type"] for p in payloads] == [
        "user",
        "search",
        "fetch",
        "search",
        "fetch",
        "message",
        "loop_end",
    ]
    assert payloads[0]["turn"] == "counterpart" and payloads[0]["result"] == "find boots"
    calls = payloads[1:5]
    assert [p.get("tool_call_id") for p in calls] == ["a", "b", "c", "d"]
    assert calls[0]["params"] == {"query": "shoes"}
    assert calls[0]["result"] == "no results for shoes" and calls[0]["success"] is True
    assert all(p.get("response_id") for p in calls)
    answer = payloads[5]
    assert answer["turn"] == "message" and answer["result"] == "Boots at https://x/2."
    assert answer["response_id"] == result["messages"][-1].id
    assert payloads[6]["terminated"] is True and payloads[6]["turn"] == "message"


def test_a_conversation_publishes_both_sides_and_its_restating_is_found(laddered):
    """One invoke per person's message on one thread (a chat agent): each human message
    is published once as the counterpart's turn, each answer as the agent's turn."""
    from langgraph.checkpoint.memory import InMemorySaver

    settings, guard = laddered
    loop_id = f"lc-chat-{uuid.uuid4().hex[:6]}"
    model = fakes.ScriptedChatModel(
        messages=iter(lc_messages.AIMessage(text) for text in AGENT_SAYS), requests=[], waits={}
    )
    agent = lc_agents.create_agent(
        model,
        [fakes.search],
        middleware=[lc_adapter.LoopwardenMiddleware(guard)],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": loop_id}}

    for said in PERSON_SAYS:
        agent.invoke({"messages": [{"role": "user", "content": said}]}, config)

    assert [len(request) for request in model.requests] == [1, 3, 5]  # the history grew
    assert_published_conversation(published_events(settings, loop_id, 9))
