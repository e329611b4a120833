"""LangChain's own fake chat model, scripted for the adapters' tests, and two tools.

Imported by the tests that use it through :func:`deferred.deferred`, so that only the
test process that runs them imports LangChain (tests/support/deferred.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.outputs import ChatResult
from langchain_core.tools import tool
from pydantic import Field


class ScriptedChatModel(GenericFakeChatModel):
    """LangChain's fake chat model (its answers: ``messages``, tools bound as given)
    that records each request and, before answering request ``k``, calls ``pace(k)``
    (to set the guard's bound for the wait that follows the call it makes) and waits
    for what ``waits[k]`` asks of the guard's inbox — the guard's own synchronisation
    standing in for an LLM's latency."""

    requests: list = Field(default_factory=list)
    waits: dict = Field(default_factory=dict)
    pace: Callable[[int], Any] | None = None

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self

    def _generate(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.requests.append(list(messages))
        k = len(self.requests) - 1
        if self.pace is not None:
            self.pace(k)
        wait = self.waits.get(k)
        if wait is not None:
            assert wait(), f"no verdict before request {k}"
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


@tool
def search(query: str) -> str:
    """Search the catalogue."""
    return f"no results for {query}"


@tool
def fetch(url: str) -> str:
    """Fetch a page."""
    return f"<html>{url}</html>"
