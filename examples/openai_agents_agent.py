"""An OpenAI Agents SDK agent under loopwarden: ``**watch()`` on the run.

    pip install 'loopwarden[openai-agents]'
    loopwarden dev                      # another terminal; then export the line it prints
    python examples/openai_agents_agent.py

The model is the SDK's ScriptedModel repeating one lookup, so no API key is needed;
with a real model only ``model=`` changes.
"""

from __future__ import annotations

import asyncio
import uuid

from _scripted import MAX_CALLS, report
from agents import Agent, Runner, function_tool
from agents.exceptions import ToolInputGuardrailTripwireTriggered
from agents.testing import (
    ModelCall,
    ModelStep,
    ScriptedModel,
    assistant_message,
    function_call,
)

from loopwarden.adapters.guard import shared_guard
from loopwarden.adapters.openai_agents import LoopwardenStopped, watch
from loopwarden.schemas.tool_calls import CONTEXT_HEADER

LOOP_ID = f"openai-agents-example-{uuid.uuid4().hex[:6]}"
guard = shared_guard()


@function_tool
def lookup(term: str) -> str:
    """Look a term up."""
    return f"nothing about {term!r}"


async def repeat(call: ModelCall) -> list:
    return [function_call("lookup", {"term": "flaky"}, call_id=uuid.uuid4().hex[:8])]


async def main() -> None:
    steps = [ModelStep.respond(repeat) for _ in range(MAX_CALLS)]
    model = ScriptedModel([*steps, [assistant_message("I could not find it.")]])
    agent = Agent(name="researcher", model=model, tools=[lookup])
    await asyncio.to_thread(guard.wait_ready, 30)
    stopped = None
    try:
        await Runner.run(agent, "Why is the test flaky?", max_turns=50, **watch(LOOP_ID))
    except LoopwardenStopped as exc:
        stopped = str(exc)
    except ToolInputGuardrailTripwireTriggered as exc:
        stopped = str(exc.output.output_info)
    warned = sum(1 for call in model.calls if CONTEXT_HEADER in str(call.system_instructions))
    report(LOOP_ID, len(model.calls), warned, stopped)


asyncio.run(main())
guard.close()
