"""A LangChain v1 agent under loopwarden: one middleware.

    pip install 'loopwarden[langchain]'
    loopwarden dev                      # another terminal; then export the line it prints
    python examples/langchain_agent.py

The model is LangChain's fake chat model scripted to repeat one search, so no API key
is needed; with a real model only ``model`` changes.
"""

from __future__ import annotations

import uuid
from typing import Any

from _scripted import MAX_CALLS, report
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatResult
from langchain_core.tools import tool

from loopwarden.adapters.guard import shared_guard
from loopwarden.adapters.langchain import LoopwardenMiddleware
from loopwarden.schemas.tool_calls import CONTEXT_HEADER, STOP_HEADER

LOOP_ID = f"langchain-example-{uuid.uuid4().hex[:6]}"
guard = shared_guard()  # what LoopwardenMiddleware() uses
warned = 0


class RepeatingModel(GenericFakeChatModel):
    """Calls ``search`` with the same query every time."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> RepeatingModel:
        return self

    def _generate(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        global warned
        if any(CONTEXT_HEADER in str(m.content) for m in messages):
            warned += 1  # in the system message of this request only
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kw)


@tool
def search(query: str) -> str:
    """Search the docs."""
    return f"no results for {query!r}"


calls = (
    AIMessage("", tool_calls=[{"name": "search", "args": {"query": "flaky"}, "id": f"c{n}"}])
    for n in range(MAX_CALLS)
)
final = AIMessage("I could not find it.")
model = RepeatingModel(messages=iter([*calls, final]))
agent = create_agent(model, [search], middleware=[LoopwardenMiddleware()])
guard.wait_ready(30)
result = agent.invoke(
    {"messages": [{"role": "user", "content": "Why is the test flaky?"}]},
    {"configurable": {"thread_id": LOOP_ID}, "recursion_limit": 100},
)
last = result["messages"][-1].content
requests = sum(1 for m in result["messages"] if isinstance(m, AIMessage))
report(LOOP_ID, requests, warned, last if last.startswith(STOP_HEADER) else None)
guard.close()
