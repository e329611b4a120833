"""A Pydantic AI agent under loopwarden: one capability.

    pip install 'loopwarden[pydantic-ai]'
    loopwarden dev                      # another terminal; then export the line it prints
    python examples/pydantic_ai_agent.py

The model is Pydantic AI's FunctionModel repeating one lookup, so no API key is
needed; with a real model only the first argument of ``Agent`` changes.
"""

from __future__ import annotations

import contextlib
import uuid

from _scripted import MAX_CALLS, report
from pydantic_ai import Agent
from pydantic_ai.exceptions import RunCancelled
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from loopwarden.adapters.guard import shared_guard
from loopwarden.adapters.pydantic_ai import Loopwarden
from loopwarden.schemas.tool_calls import CONTEXT_HEADER, stop_text

LOOP_ID = f"pydantic-ai-example-{uuid.uuid4().hex[:6]}"
guard = shared_guard()
seen: list[bool] = []


def repeating(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Looks up the same thing every time."""
    seen.append(CONTEXT_HEADER in str(messages[-1].instructions))  # this request's
    if len(seen) > MAX_CALLS:
        return ModelResponse(parts=[TextPart("I could not find it.")])
    return ModelResponse(parts=[ToolCallPart("lookup", {"term": "flaky"}, f"c{len(seen)}")])


def lookup(term: str) -> str:
    """Look a term up."""
    return f"nothing about {term!r}"


loopwarden = Loopwarden()
agent = Agent(FunctionModel(repeating), tools=[lookup], capabilities=[loopwarden])
guard.wait_ready(30)
with contextlib.suppress(RunCancelled):  # a stop: loopwarden.stopped says why
    agent.run_sync("Why is the test flaky?", conversation_id=LOOP_ID)
stop = loopwarden.stopped.get(LOOP_ID)
report(LOOP_ID, len(seen), sum(1 for n in seen if n), stop and stop_text(stop))
guard.close()
