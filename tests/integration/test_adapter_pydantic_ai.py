"""The Pydantic AI capability with Pydantic AI's FunctionModel, a real worker and broker."""

from __future__ import annotations

import uuid

import pytest
from deferred import deferred

from loopwarden.schemas.tool_calls import CONTEXT_HEADER

from .adapter_harness import (
    AGENT_SAYS,
    PERSON_SAYS,
    STOP_AT,
    VERDICT_WAIT_S,
    WARN_AT,
    assert_no_warning_for,
    assert_published_conversation,
    delegation_cycle_warned_then_stopped,
    published_events,
    read_topic,
    verdict_wait_after,
)

pai = deferred("pydantic_ai")
pai_exceptions = deferred("pydantic_ai.exceptions")
pai_messages = deferred("pydantic_ai.messages")
pai_function = deferred("pydantic_ai.models.function")
pai_adapter = deferred("loopwarden.adapters.pydantic_ai")

pytestmark = pytest.mark.integration


def injected(messages) -> list[str]:
    """loopwarden's notes in a request: in its instructions (or, wrongly, as a prompt)."""
    last = messages[-1]
    notes = [last.instructions] if CONTEXT_HEADER in str(getattr(last, "instructions", "")) else []
    return notes + [
        part.content
        for message in messages
        for part in getattr(message, "parts", ())
        if part.part_kind == "user-prompt" and CONTEXT_HEADER in str(part.content)
    ]


def scripted(script, waits, requests):
    def respond(messages, info: pai_function.AgentInfo) -> pai_messages.ModelResponse:
        requests.append(list(messages))
        wait = waits.get(len(requests) - 1)
        if wait is not None:
            assert wait(), f"no verdict before request {len(requests) - 1}"
        return script(len(requests) - 1)

    return pai_function.FunctionModel(respond)


def lookup(query: str) -> str:
    """Look something up."""
    return f"nothing about {query}"


def test_a_spinning_agent_is_warned_in_its_very_next_request_then_cancelled(laddered, monkeypatch):
    """No stand-in latency in the model: the capability waits for the verdict on the
    call just made, and the note is an instruction of that request only."""
    _, guard = laddered
    monkeypatch.setattr(guard, "verdict_wait_s", 0.0)
    loop_id = f"pai-spin-{uuid.uuid4().hex[:6]}"
    requests: list = []

    def same_call(k: int) -> pai_messages.ModelResponse:
        guard.verdict_wait_s = verdict_wait_after(k + 1)
        return pai_messages.ModelResponse(
            parts=[pai_messages.ToolCallPart("lookup", {"query": "x"}, tool_call_id=f"c{k}")]
        )

    capability = pai_adapter.Loopwarden(guard)
    agent = pai.Agent(scripted(same_call, {}, requests), tools=[lookup], capabilities=[capability])

    with pytest.raises(pai_exceptions.RunCancelled) as cancelled:
        agent.run_sync("find x", conversation_id=loop_id)

    # request k follows call k: the 4th identical call's warning is in request 4
    assert all(not injected(request) for request in requests[:WARN_AT])
    warning_text = injected(requests[WARN_AT])
    assert len(warning_text) == 1 and "lookup" in warning_text[0]
    assert len(requests) == STOP_AT, "the run went on past the stop"
    assert capability.stopped[loop_id].step == "stop"
    # no prompt was added to the conversation: the notes were instructions
    history = cancelled.value.messages if hasattr(cancelled.value, "messages") else []
    assert not any(
        part.part_kind == "user-prompt" and CONTEXT_HEADER in str(part.content)
        for message in history
        for part in getattr(message, "parts", ())
    )


def test_a_healthy_run_gets_nothing_and_failures_are_published(laddered):
    settings, guard = laddered
    loop_id = f"pai-ok-{uuid.uuid4().hex[:6]}"
    requests: list = []

    def plan(k: int) -> pai_messages.ModelResponse:
        if k < 3:
            call = pai_messages.ToolCallPart("lookup", {"query": f"q{k}"}, tool_call_id=f"t{k}")
            return pai_messages.ModelResponse(parts=[call])
        if k == 3:
            return pai_messages.ModelResponse(
                parts=[pai_messages.ToolCallPart("broken", {}, tool_call_id="t3")]
            )
        return pai_messages.ModelResponse(parts=[pai_messages.TextPart("done")])

    def broken() -> str:
        """Always fails."""
        raise RuntimeError("disk full")

    agent = pai.Agent(
        scripted(plan, {}, requests),
        tools=[lookup, broken],
        capabilities=[pai_adapter.Loopwarden(guard)],
    )
    with pytest.raises(RuntimeError, match="disk full"):
        agent.run_sync("look things up", conversation_id=loop_id)

    assert all(not injected(request) for request in requests)
    assert_no_warning_for(guard, loop_id, settings)
    payloads = [event["payload"] for event in published_events(settings, loop_id, 5)]
    assert [p["action_type"] for p in payloads] == ["user"] + ["lookup"] * 3 + ["broken"]
    assert payloads[0]["turn"] == "counterpart" and payloads[0]["result"] == "look things up"
    calls = payloads[1:]
    assert calls[0]["params"] == {"query": "q0"} and calls[0]["result"] == "nothing about q0"
    assert [p["tool_call_id"] for p in calls] == ["t0", "t1", "t2", "t3"]
    assert calls[3]["success"] is False and calls[3]["error_message"] == "disk full"


def test_a_conversation_publishes_both_sides_and_its_restating_is_found(laddered):
    """One run per person's message in one conversation (the history passed on): each
    prompt is published once as the counterpart's turn, each answer as the agent's."""
    settings, guard = laddered
    loop_id = f"pai-chat-{uuid.uuid4().hex[:6]}"
    requests: list = []
    agent = pai.Agent(
        scripted(
            lambda k: pai_messages.ModelResponse(parts=[pai_messages.TextPart(AGENT_SAYS[k])]),
            {},
            requests,
        ),
        capabilities=[pai_adapter.Loopwarden(guard)],
    )
    history: list = []
    for said in PERSON_SAYS:
        result = agent.run_sync(said, message_history=history, conversation_id=loop_id)
        history = result.all_messages()

    assert [len(request) for request in requests] == [1, 3, 5]  # the history grew
    assert_published_conversation(published_events(settings, loop_id, 9))


TASK = "Find the cheapest direct flight from Berlin to Lisbon on 12 December"


def test_two_agents_delegating_in_a_circle_are_one_family_warned_then_stopped(
    laddered, monkeypatch
):
    """Pydantic AI's agent delegation (an agent run inside another's tool): each run is a
    loop of the root's family, so the fleet role sees the circle no per-run guard sees."""
    settings, guard = laddered
    root = f"pai-planner-{uuid.uuid4().hex[:8]}"
    planner_requests: list = []
    researcher_requests: list = []

    def hand_over(tool: str):
        def respond(k: int) -> pai_messages.ModelResponse:
            call = pai_messages.ToolCallPart(tool, {"task": TASK}, tool_call_id=f"{tool}-{k}")
            return pai_messages.ModelResponse(parts=[call])

        return respond

    # the researcher's 3rd run is the first finding (warns everyone), the 4th planner run
    # the second (the stop): from the planner's 3rd answer on, each run's first request
    # waits for its verdict (generously: each comes), so the 4th planner run is stopped
    # before its first model request
    monkeypatch.setattr(guard, "verdict_wait_s", 0.0)
    to_researcher = hand_over("ask_researcher")

    def planner_answer(k: int) -> pai_messages.ModelResponse:
        if k == 2:
            guard.verdict_wait_s = VERDICT_WAIT_S
        return to_researcher(k)

    planner = pai.Agent(
        scripted(planner_answer, {}, planner_requests),
        name="planner",
        capabilities=[pai_adapter.Loopwarden(guard)],
    )
    researcher = pai.Agent(
        scripted(hand_over("ask_planner"), {}, researcher_requests),
        name="researcher",
        capabilities=[pai_adapter.Loopwarden(guard)],
    )

    @planner.tool
    async def ask_researcher(ctx: pai.RunContext, task: str) -> str:
        """Hand a task to the researcher agent."""
        return (await researcher.run(task, usage=ctx.usage)).output

    @researcher.tool
    async def ask_planner(ctx: pai.RunContext, task: str) -> str:
        """Hand a task back to the planner agent."""
        return (await planner.run(task, usage=ctx.usage)).output

    # the stop cancels the run that reads it, and each caller's tool with it
    with pytest.raises(pai_exceptions.RunCancelled):
        planner.run_sync(TASK, conversation_id=root)
    # planner ×4 (the root and 3 delegated runs), researcher ×3: the 4th planner run was
    # cancelled before its first model request
    assert len(planner_requests) == 3 and len(researcher_requests) == 3

    delegation_cycle_warned_then_stopped(settings, root, loops=7)

    # every delegated run published its start under the root, with its parent and task
    starts = read_topic(
        settings,
        settings.topics.actions,
        lambda e: e.get("payload", {}).get("root_loop_id") == root,
        6,
    )
    first = {e["loop_id"]: e["payload"] for e in reversed(starts)}
    assert len(first) == 6 and root not in first
    assert {p["action_type"] for p in first.values()} == {"delegated_run_start"}
    assert all(p["task"] == TASK for p in first.values())
    agents = [p["agent"] for p in first.values()]
    assert sorted(agents) == ["planner"] * 3 + ["researcher"] * 3


def test_a_call_the_tool_refuses_with_model_retry_is_published_rejected(laddered):
    """Pydantic AI's ModelRetry (the tool asks the model for other arguments) is a
    refusal: the event says ``rejected``, so two of the same are a loop (issue 58)."""
    settings, guard = laddered
    loop_id = f"pai-retry-{uuid.uuid4().hex[:6]}"

    def plan(k: int) -> pai_messages.ModelResponse:
        if k < 2:
            call = pai_messages.ToolCallPart("book", {"amount": 950 + k}, tool_call_id=f"b{k}")
            return pai_messages.ModelResponse(parts=[call])
        return pai_messages.ModelResponse(parts=[pai_messages.TextPart("done")])

    def book(amount: int) -> str:
        """Book the flight, paying ``amount``."""
        if amount < 1000:
            raise pai.ModelRetry(f"total price is 1002, but paid {amount}")
        return "booked"

    agent = pai.Agent(
        scripted(plan, {}, []),
        tools=[book],
        capabilities=[pai_adapter.Loopwarden(guard)],
        retries=3,
    )
    agent.run_sync("book it", conversation_id=loop_id)
    events = published_events(settings, loop_id, 3)  # the prompt, then the two refusals
    payloads = [e["payload"] for e in events if e["payload"]["action_type"] == "book"]
    assert [(p["action_type"], p.get("rejected"), p["success"]) for p in payloads] == [
        ("book", True, False),
        ("book", True, False),
    ]
    assert "total price is 1002" in payloads[0]["error_message"]
