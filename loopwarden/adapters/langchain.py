"""LangChain v1 / LangGraph: one middleware puts an agent under loopwarden.

>>> from langchain.agents import create_agent
>>> from loopwarden.adapters.langchain import LoopwardenMiddleware
>>> agent = create_agent(model, tools, middleware=[LoopwardenMiddleware()])

- every tool call is published (``wrap_tool_call``): the tool name as action type, its
  arguments, success or the error, the result, ``tool_call_id``, and the id of the
  model response that made it as ``response_id``;
- the conversation's turns: the person's messages (each human message the model has
  not answered yet, at ``before_model``) as the counterpart's turns, and the model's
  answers without a tool call (``after_model``) as the agent's message turns, so an
  agent asking again for what the person keeps answering is seen (a sub-agent's
  request comes from its caller, not a person: it is its ``task``);
- before each model call (``before_model``) it waits, bounded
  (``adapters.verdict_wait_ms``), for the verdict on the tool results just published,
  and the run's warnings go into that request's system message (``wrap_model_call``):
  the model reads a warning in the very next request, and every later one, without a
  turn kept in the conversation;
- a ``stop`` recommendation ends the run through LangGraph's own ``jump_to="end"``
  with a final message saying why;
- with ``adapters.memory_scope`` set, what earlier runs learned that fits the run's
  request (the worker's memory search, once per run at ``before_agent``) goes into the
  same system note;
- the end of the run is published as a terminating turn (``after_agent``).

The loop id is the LangGraph ``thread_id`` when the run has one, else one per run
(``loop_id=`` overrides: a string, or a function of the run's config).

An agent run inside another's tool call (a sub-agent called as a tool) is a loop of
its own in the caller's family: its events carry ``parent_loop_id``,
``root_loop_id`` and its ``agent`` name (``agent=``, else ``create_agent(name=…)``),
and it starts with a ``delegated_run_start`` message turn carrying its ``task`` (the
request it was given), so the fleet role sees delegation cycles and budgets across
the agents while the calls are still nested. A sub-agent stops when its own loop or
its family's root is told to stop.

Install with ``pip install 'loopwarden[langchain]'``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, NotRequired

from langchain.agents.middleware import AgentMiddleware, AgentState, hook_config
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.config import get_config

from loopwarden.adapters.guard import LoopGuard, shared_guard
from loopwarden.adapters.lineage import (
    Lineage,
    delegating,
    family_stop,
    lineage_of,
    parent,
    start_delegated,
)
from loopwarden.schemas.tool_calls import is_injected, stop_text, turn_text
from loopwarden.settings import Settings

LOOP_KEY = "loopwarden_loop_id"


class LoopwardenState(AgentState):
    """The agent state with the loop id loopwarden publishes under."""

    loopwarden_loop_id: NotRequired[str]


def _thread_id() -> str | None:
    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:
        return None
    thread_id = configurable.get("thread_id")
    return None if thread_id is None else str(thread_id)


def _response_id(state: Any, tool_call_id: str | None) -> str | None:
    for message in reversed((state or {}).get("messages", [])):
        if isinstance(message, AIMessage):
            if any(call.get("id") == tool_call_id for call in message.tool_calls):
                return message.id
            return None
    return None


def _task(state: Any) -> str | None:
    """The request a sub-agent run was given: its first human message."""
    for message in (state or {}).get("messages", []):
        if isinstance(message, HumanMessage):
            content = message.content
            return content if isinstance(content, str) else str(content)
    return None


def with_note(system: SystemMessage | None, note: str) -> SystemMessage:
    """``system`` with ``note`` after it (a new system message when there was none)."""
    if system is None:
        return SystemMessage(note)
    content = system.content
    if isinstance(content, str):
        return SystemMessage(f"{content}\n\n{note}" if content else note)
    return SystemMessage([*content, {"type": "text", "text": note}])


def unanswered_person_turns(messages: list[Any]) -> list[str]:
    """The texts of the human messages after the model's last answer (all of them
    before its first), loopwarden's own injected warnings left out. Read from the end
    back to that answer: a long run's history is not scanned at every step."""
    turns: list[str] = []
    for message in reversed(messages):
        if isinstance(message, AIMessage):
            break
        if isinstance(message, HumanMessage):
            text = turn_text(message.content)
            if text is not None and not is_injected(text):
                turns.append(text)
    return turns[::-1]


class LoopwardenMiddleware(AgentMiddleware):
    """Publishes the agent's tool calls, injects loopwarden's warnings, stops on ``stop``."""

    state_schema = LoopwardenState

    def __init__(
        self,
        guard: LoopGuard | None = None,
        *,
        settings: Settings | None = None,
        loop_id: str | Callable[[dict[str, Any]], str] | None = None,
        agent: str | None = None,
    ) -> None:
        super().__init__()
        self.guard = guard or shared_guard(settings)
        self._loop_id = loop_id
        self._agent = agent

    # -- the loop id ---------------------------------------------------------------------------

    def _new_loop_id(self) -> str:
        if isinstance(self._loop_id, str):
            return self._loop_id
        if callable(self._loop_id):
            return self._loop_id(dict(get_config()))
        return _thread_id() or f"langchain-{uuid.uuid4().hex}"

    def _agent_name(self) -> str | None:
        if self._agent:
            return self._agent
        try:
            name = (get_config().get("metadata") or {}).get("lc_agent_name")
        except RuntimeError:
            return None
        return None if name is None else str(name)

    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        started = self._start(state)
        self.guard.recall(started[LOOP_KEY], self._request(state))
        return started

    async def abefore_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        started = self._start(state)
        await asyncio.to_thread(self.guard.recall, started[LOOP_KEY], self._request(state))
        return started

    @staticmethod
    def _request(state: Any) -> str:
        """What this run was asked: the human messages not answered yet."""
        return "\n".join(unanswered_person_turns((state or {}).get("messages", [])))

    def _start(self, state: Any) -> dict[str, Any]:
        agent = self._agent_name()
        caller = parent()
        if caller is None:
            loop_id = self._new_loop_id()
            own = {"agent": agent, "task": _task(state)}
            self.guard.watch(loop_id, **{k: v for k, v in own.items() if v})
            return {LOOP_KEY: loop_id}
        # a sub-agent run inside the caller's tool call: a loop of the caller's family
        given = self._loop_id if isinstance(self._loop_id, str) else None
        loop_id = given or f"{agent or 'subagent'}-{uuid.uuid4().hex[:12]}"
        start_delegated(self.guard, loop_id, caller, agent, _task(state))
        return {LOOP_KEY: loop_id}

    # -- inject / stop ---------------------------------------------------------------------------

    def _heard(self, state: Any) -> str | None:
        """The run's loop id, once the person's new turns are published."""
        loop_id = state.get(LOOP_KEY)
        if loop_id is not None and "parent_loop_id" not in self.guard.lineage(loop_id):
            for text in unanswered_person_turns(state.get("messages", [])):
                self.guard.heard(loop_id, text)
        return loop_id

    def _stop_if_told(self, loop_id: str) -> dict[str, Any] | None:
        stop = family_stop(self.guard, loop_id)
        if stop is None:
            return None
        self.guard.end(loop_id, reason="spin", success=False)
        self.guard.forget(loop_id)
        return {"jump_to": "end", "messages": [AIMessage(content=stop_text(stop))]}

    @hook_config(can_jump_to=["end"])
    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        loop_id = self._heard(state)
        if loop_id is None:
            return None
        self.guard.await_verdict(loop_id)  # the verdict on the tool results just published
        return self._stop_if_told(loop_id)

    @hook_config(can_jump_to=["end"])
    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        loop_id = self._heard(state)
        if loop_id is None:
            return None
        await asyncio.to_thread(self.guard.await_verdict, loop_id)
        return self._stop_if_told(loop_id)

    def _with_note(self, request: Any) -> Any:
        """The request with the run's warnings appended to its system message (this
        request only: the conversation does not keep them)."""
        state = request.state if isinstance(request.state, dict) else {}
        loop_id = state.get(LOOP_KEY)
        note = None if loop_id is None else self.guard.note(loop_id)
        if note is None:
            return request
        return request.override(system_message=with_note(request.system_message, note))

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        return handler(self._with_note(request))

    async def awrap_model_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        return await handler(self._with_note(request))

    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        loop_id = state.get(LOOP_KEY)
        messages = state.get("messages") or []
        answer = messages[-1] if messages else None
        if loop_id is None or not isinstance(answer, AIMessage) or answer.tool_calls:
            return None
        text = turn_text(answer.content)
        if text is not None:
            self.guard.said(loop_id, text, **({"response_id": answer.id} if answer.id else {}))
        return None

    async def aafter_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self.after_model(state, runtime)

    def after_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        loop_id = state.get(LOOP_KEY)
        if loop_id is not None and self.guard.stop_for(loop_id) is None:
            self.guard.end(loop_id, reason="finalized")
        return None

    async def aafter_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self.after_agent(state, runtime)

    # -- observe -------------------------------------------------------------------------------

    def _lineage(self, request: Any) -> Lineage | None:
        state = request.state if isinstance(request.state, dict) else {}
        loop_id = state.get(LOOP_KEY)
        if loop_id is None:
            return None
        return lineage_of(self.guard, loop_id)

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        started = time.perf_counter()
        lineage = self._lineage(request)
        try:
            with delegating(lineage) if lineage else contextlib.nullcontext():
                result = handler(request)
        except Exception as exc:
            self._publish(request, None, exc, started)
            raise
        self._publish(request, result, None, started)
        return result

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        started = time.perf_counter()
        lineage = self._lineage(request)
        try:
            with delegating(lineage) if lineage else contextlib.nullcontext():
                result = await handler(request)
        except Exception as exc:
            self._publish(request, None, exc, started)
            raise
        self._publish(request, result, None, started)
        return result

    def _publish(
        self, request: Any, result: Any, error: BaseException | None, started: float
    ) -> None:
        state = request.state if isinstance(request.state, dict) else {}
        loop_id = state.get(LOOP_KEY) or _thread_id()
        if loop_id is None:
            return
        call = request.tool_call
        failure: BaseException | str | None = error
        if isinstance(result, ToolMessage) and result.status == "error" and error is None:
            failure = str(result.content)
        self.guard.tool_call(
            loop_id,
            call["name"],
            call.get("args"),
            result=result if isinstance(result, ToolMessage) else None,
            error=failure,
            tool_call_id=call.get("id"),
            response_id=_response_id(state, call.get("id")),
            duration_ms=(time.perf_counter() - started) * 1000,
        )
