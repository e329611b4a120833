"""The OpenAI Agents SDK adapter with the SDK's own ScriptedModel, a real worker and broker."""

from __future__ import annotations

import asyncio
import threading
import uuid

import pytest
from deferred import deferred

from loopwarden.schemas.tool_calls import CONTEXT_HEADER

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

sdk = deferred("agents")
sdk_exceptions = deferred("agents.exceptions")
sdk_testing = deferred("agents.testing")
sdk_adapter = deferred("loopwarden.adapters.openai_agents")

pytestmark = pytest.mark.integration


def lookup(query: str) -> str:
    """Look something up."""
    return f"nothing about {query}"


def broken() -> str:
    """Always fails."""
    raise RuntimeError("disk full")


def tools(*functions) -> list:
    """The functions as the SDK's function tools (made in the test that uses them)."""
    return [sdk.function_tool(f) for f in functions]


def injected(call) -> list[str]:
    """loopwarden's notes in a model call: in its instructions (or, wrongly, as input)."""
    notes = [call.system_instructions] if CONTEXT_HEADER in str(call.system_instructions) else []
    return notes + [
        item["content"]
        for item in call.input
        if isinstance(item, dict) and CONTEXT_HEADER in str(item.get("content"))
    ]


def scripted(steps, waits) -> sdk_testing.ScriptedModel:
    """Steps answered in order; before answering step k, ``waits[k]`` must hold (the guard's
    inbox waited on in a thread: the latency of a real model call, made deterministic)."""

    def responder(step, k):
        async def respond(call):
            wait = waits.get(k)
            if wait is not None:
                assert await asyncio.to_thread(wait), f"no verdict before request {k}"
            return step

        return sdk_testing.ModelStep.respond(respond)

    return sdk_testing.ScriptedModel([responder(step, k) for k, step in enumerate(steps)])


async def test_a_spinning_agent_is_warned_in_its_very_next_request_then_stopped(
    laddered, monkeypatch
):
    """No stand-in latency in the model: the input filter waits for the verdict on the
    call just made, and the note goes into that call's instructions only."""
    _, guard = laddered
    monkeypatch.setattr(guard, "verdict_wait_s", 0.0)
    loop_id = f"oai-spin-{uuid.uuid4().hex[:6]}"

    def paced(k: int):
        async def respond(call):
            guard.verdict_wait_s = verdict_wait_after(k + 1)
            return [sdk_testing.function_call("lookup", {"query": "x"}, call_id=f"c{k}")]

        return sdk_testing.ModelStep.respond(respond)

    model = sdk_testing.ScriptedModel([paced(k) for k in range(40)])
    agent = sdk.Agent(name="spinner", model=model, tools=tools(lookup), instructions="Find things.")

    # the stop came with the 10th call: the run ends before another model call
    with pytest.raises(sdk_adapter.LoopwardenStopped, match="same result"):
        await sdk.Runner.run(
            agent, "find x", max_turns=100, **sdk_adapter.watch(loop_id, guard=guard)
        )

    calls = model.calls
    # call k follows tool call k: the 4th identical call's warning is in call 4
    assert all(not injected(call) for call in calls[:WARN_AT])
    warning_text = injected(calls[WARN_AT])
    assert len(warning_text) == 1 and "lookup" in warning_text[0]
    assert warning_text[0].startswith("Find things.")  # after the agent's own instructions
    assert len(calls) == STOP_AT, "the run went on past the stop"


async def test_a_stop_that_arrives_during_a_model_call_refuses_its_tool_call(laddered, monkeypatch):
    """Without the wait (or past its bound) the stop can arrive while the model answers:
    loopwarden's tool guardrail refuses the tool call that answer makes."""
    _, guard = laddered
    monkeypatch.setattr(guard, "verdict_wait_s", 0.0)
    loop_id = f"oai-late-{uuid.uuid4().hex[:6]}"
    steps = [
        [sdk_testing.function_call("lookup", {"query": "x"}, call_id=f"c{k}")] for k in range(40)
    ]
    # the stop arrives during the model call that follows the stopping tool call: the run
    # sees it from that call on. Left to the broker's round trip, it came before that
    # call's input filter once, on a loaded machine (CI of 0358661, Apache Kafka), and the
    # filter stopped the run first (test_a_stop_in_force_ends_the_run_before_its_next_model_call)
    during_the_call = threading.Event()
    stop_in_force = guard.stop_for
    monkeypatch.setattr(
        guard, "stop_for", lambda loop: stop_in_force(loop) if during_the_call.is_set() else None
    )

    def the_stop_arrives() -> bool:
        during_the_call.set()
        return guard.inbox.wait(loop_id, stop=True, timeout_s=60)

    model = scripted(steps, {STOP_AT: the_stop_arrives})
    agent = sdk.Agent(name="spinner", model=model, tools=tools(lookup))

    with pytest.raises(sdk_exceptions.ToolInputGuardrailTripwireTriggered) as stopped:
        await sdk.Runner.run(
            agent, "find x", max_turns=100, **sdk_adapter.watch(loop_id, guard=guard)
        )
    assert stopped.value.guardrail.get_name() == sdk_adapter.GUARDRAIL_NAME
    assert "same result" in stopped.value.output.output_info
    assert len(model.calls) == STOP_AT + 1


async def test_a_healthy_run_gets_nothing_and_failures_are_published(laddered):
    settings, guard = laddered
    loop_id = f"oai-ok-{uuid.uuid4().hex[:6]}"
    steps = [
        [sdk_testing.function_call("lookup", {"query": "a"}, call_id="t0")],
        [sdk_testing.function_call("lookup", {"query": "b"}, call_id="t1")],
        [sdk_testing.function_call("broken", {}, call_id="t2")],
        [sdk_testing.assistant_message("done")],
    ]
    model = scripted(steps, {})
    agent = sdk.Agent(name="worker", model=model, tools=tools(lookup, broken))
    filtered = []

    def own_filter(data):  # the caller's own input filter still runs
        filtered.append(len(data.model_data.input))
        return data.model_data

    own = sdk.RunConfig(call_model_input_filter=own_filter)
    run = sdk_adapter.watch(loop_id, guard=guard, run_config=own)
    result = await sdk.Runner.run(agent, "look up a and b", **run)

    assert len(filtered) == len(steps)

    assert result.final_output == "done"
    assert all(not injected(call) for call in model.calls)
    await asyncio.to_thread(assert_no_warning_for, guard, loop_id, settings)
    events = await asyncio.to_thread(published_events, settings, loop_id, 6)
    payloads = [event["payload"] for event in events]
    kinds = [p["action_type"] for p in payloads]
    assert kinds == ["user", "lookup", "lookup", "broken", "message", "loop_end"]
    assert payloads[0]["turn"] == "counterpart" and payloads[0]["result"] == "look up a and b"
    calls = payloads[1:4]
    assert calls[0]["params"] == {"query": "a"} and calls[0]["tool_call_id"] == "t0"
    assert calls[0]["result"] == "nothing about a" and calls[0]["success"] is True
    assert calls[2]["success"] is False
    assert {p.get("agent") for p in calls} == {"worker"}  # who acted, for the fleet
    assert payloads[4]["turn"] == "message" and payloads[4]["result"] == "done"
    assert payloads[4]["agent"] == "worker"


async def test_a_conversation_publishes_both_sides_and_its_restating_is_found(laddered):
    """One run per person's message, the conversation passed on as input: each new user
    message is published once as the counterpart's turn, each answer as the agent's."""
    settings, guard = laddered
    loop_id = f"oai-chat-{uuid.uuid4().hex[:6]}"
    model = scripted([[sdk_testing.assistant_message(text)] for text in AGENT_SAYS], {})
    agent = sdk.Agent(name="support", model=model)
    conversation: list = []
    for said in PERSON_SAYS:
        conversation.append({"role": "user", "content": said})
        result = await sdk.Runner.run(
            agent, conversation, **sdk_adapter.watch(loop_id, guard=guard)
        )
        conversation = result.to_input_list()

    assert [len(call.input) for call in model.calls] == [1, 3, 5]  # the history grew
    # each run's end (a turn of no agent) between the answers does not break the streak
    events = await asyncio.to_thread(published_events, settings, loop_id, 9)
    answers = [e["payload"] for e in events if e["payload"]["action_type"] == "message"]
    assert [p["agent"] for p in answers] == ["support"] * 3
    assert_published_conversation(events)


async def test_a_stop_in_force_ends_the_run_before_its_next_model_call(laddered):
    _, guard = laddered
    loop_id = f"oai-stopped-{uuid.uuid4().hex[:6]}"
    for k in range(STOP_AT):  # an earlier run of this loop spun into a stop
        guard.tool_call(loop_id, "lookup", {"query": "x"}, result="same", tool_call_id=f"p{k}")
    assert await asyncio.to_thread(guard.inbox.wait, loop_id, stop=True, timeout_s=60)
    model = scripted([[sdk_testing.assistant_message("never")]], {})
    agent = sdk.Agent(name="again", model=model, tools=tools(lookup))

    with pytest.raises(sdk_adapter.LoopwardenStopped, match="same result"):
        await sdk.Runner.run(agent, "find x", **sdk_adapter.watch(loop_id, guard=guard))
    assert model.calls == ()
