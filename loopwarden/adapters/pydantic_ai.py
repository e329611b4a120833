"""Pydantic AI: one capability puts an agent under loopwarden.

>>> from pydantic_ai import Agent
>>> from loopwarden.adapters.pydantic_ai import Loopwarden
>>> agent = Agent(model, tools=[...], capabilities=[Loopwarden()])

- every tool call is published (``after_tool_execute``, ``on_tool_execute_error``):
  the tool name as action type, its arguments, the result or the error, the call's
  ``tool_call_id``;
- the conversation's turns: the run's user prompt (``before_run``) as the
  counterpart's turn, and each model response without a tool call
  (``after_model_request``) as the agent's message turn, so an agent asking again for
  what the person keeps answering is seen (a delegated run's prompt comes from its
  caller, not a person: it is its ``task``);
- before each model request (``before_model_request``) it waits, bounded
  (``adapters.verdict_wait_ms``), for the verdict on the tool results just published,
  and the run's warnings go into that request as an instruction part: the model reads
  a warning in the very next request, and every later one, without a prompt kept in
  the message history;
- with ``adapters.memory_scope`` set, what earlier runs learned that fits the run's
  prompt (the worker's memory search, once per run at ``before_run``) goes into the
  same instructions;
- a ``stop`` recommendation cancels the run through ``RunContext.cancel()``: the
  caller gets Pydantic AI's :class:`~pydantic_ai.exceptions.RunCancelled`, with the
  history of what completed before; ``Loopwarden.stopped`` says which loops and why;
- the end of the run is published as a terminating turn (``after_run``).

The loop id is the run's ``conversation_id`` (pass one to ``agent.run`` to keep a
conversation's runs in one loop; Pydantic AI makes a fresh one otherwise).

An agent run inside another agent's tool call (Pydantic AI's agent delegation:
``await other.run(task, usage=ctx.usage)`` in a tool) is a loop of its own in the
caller's family: its events carry ``parent_loop_id``, ``root_loop_id`` and its
``agent`` name (``Agent(name=…)``), and it starts with a ``delegated_run_start``
message turn carrying its ``task`` (the prompt it was given), so the fleet role sees
delegation cycles and budgets across the agents. A sub-agent is cancelled when its
own loop or its family's root is told to stop.

Install with ``pip install 'loopwarden[pydantic-ai]'``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ModelRetry, SkipModelRequest, ToolRetryError
from pydantic_ai.messages import InstructionPart, ModelResponse, TextPart, ToolCallPart

from loopwarden.adapters.guard import LoopGuard, shared_guard
from loopwarden.adapters.lineage import (
    delegating,
    family_stop,
    lineage_of,
    parent,
    start_delegated,
)
from loopwarden.schemas.tool_calls import stop_text, turn_text
from loopwarden.schemas.warnings import LoopWarning

log = logging.getLogger("loopwarden.adapters")


def loop_id_of(ctx: Any) -> str:
    """The loop a run publishes under: its conversation id, else its run id."""
    return str(ctx.conversation_id or ctx.run_id)


@dataclass
class Loopwarden(AbstractCapability[Any]):
    """Publishes the agent's tool calls, injects loopwarden's warnings, cancels on ``stop``."""

    guard: LoopGuard | None = None
    stopped: dict[str, LoopWarning] = field(default_factory=dict)
    _started: dict[str, float] = field(default_factory=dict, repr=False)
    _delegated: dict[str, str] = field(default_factory=dict, repr=False)
    """Run id → loop id of delegated runs that carried their caller's conversation."""

    def __post_init__(self) -> None:
        if self.guard is None:
            self.guard = shared_guard()

    @property
    def _guard(self) -> LoopGuard:
        assert self.guard is not None
        return self.guard

    async def before_run(self, ctx: Any) -> None:
        loop_id, caller = loop_id_of(ctx), parent()
        agent = getattr(ctx.agent, "name", None)
        if caller is None:
            self._guard.watch(loop_id, **({"agent": agent} if agent else {}))
            prompt = _task(ctx.prompt)
            if prompt:
                self._guard.heard(loop_id, prompt)
            await asyncio.to_thread(self._guard.recall, loop_id, prompt)
            return
        if loop_id == caller.loop_id:  # the caller's history passed on: a run of its own
            loop_id = self._delegated[ctx.run_id] = f"{agent or 'subagent'}-{ctx.run_id}"
        start_delegated(self._guard, loop_id, caller, agent, _task(ctx.prompt))
        await asyncio.to_thread(self._guard.recall, loop_id, _task(ctx.prompt))

    async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
        loop_id = self._loop_id(ctx)
        # the verdict on the tool results just published, bounded
        await asyncio.to_thread(self._guard.await_verdict, loop_id)
        stop = family_stop(self._guard, loop_id)
        if stop is not None:
            self.stopped[loop_id] = stop
            self._guard.end(loop_id, reason="spin", success=False)
            self._guard.forget(loop_id)
            log.warning("loopwarden: run %s cancelled: %s", loop_id, stop_text(stop))
            ctx.cancel()  # delivered at the run's next await: the model is not called again
            raise SkipModelRequest(ModelResponse(parts=[TextPart(stop_text(stop))]))
        note = self._guard.note(loop_id)
        if note is None:
            return request_context
        # an instruction of this request only: not a prompt kept in the message history
        parameters = request_context.model_request_parameters
        parts = [*(parameters.instruction_parts or []), InstructionPart(note, dynamic=True)]
        return replace(
            request_context,
            model_request_parameters=replace(
                parameters, instruction_parts=InstructionPart.sorted(parts)
            ),
        )

    async def after_model_request(
        self, ctx: Any, *, request_context: Any, response: ModelResponse
    ) -> ModelResponse:
        loop_id = self._loop_id(ctx)
        if loop_id in self.stopped or any(isinstance(p, ToolCallPart) for p in response.parts):
            return response  # the stop's own text, or tool calls (published as they run)
        text = turn_text([part.content for part in response.parts if isinstance(part, TextPart)])
        if text is not None:
            answer_id = response.provider_response_id
            self._guard.said(loop_id, text, **({"response_id": answer_id} if answer_id else {}))
        return response

    async def wrap_tool_execute(
        self,
        ctx: Any,
        *,
        call: Any,
        tool_def: Any,
        args: Any,
        handler: Callable[[Any], Awaitable[Any]],
    ) -> Any:
        # a run the tool starts is a loop of this one's family
        with delegating(lineage_of(self._guard, self._loop_id(ctx))):
            try:
                return await handler(args)
            except (ModelRetry, ToolRetryError) as retry:
                # the tool refused the call and asks the model for other arguments: it
                # passes the error hook by, and is published here as a refusal
                cause = retry.__cause__ if isinstance(retry.__cause__, ModelRetry) else retry
                self._publish(ctx, call, args, error=cause)
                raise

    async def before_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any) -> Any:
        self._started[call.tool_call_id] = time.perf_counter()
        return args

    async def after_tool_execute(
        self, ctx: Any, *, call: Any, tool_def: Any, args: Any, result: Any
    ) -> Any:
        self._publish(ctx, call, args, result=result)
        return result

    async def on_tool_execute_error(
        self, ctx: Any, *, call: Any, tool_def: Any, args: Any, error: Exception
    ) -> Any:
        self._publish(ctx, call, args, error=error)
        raise error

    async def after_run(self, ctx: Any, *, result: Any) -> Any:
        loop_id = self._loop_id(ctx)
        self._delegated.pop(ctx.run_id, None)
        if loop_id not in self.stopped:
            self._guard.end(loop_id, reason="finalized")
        return result

    async def on_run_error(self, ctx: Any, *, error: BaseException) -> Any:
        self._delegated.pop(ctx.run_id, None)  # cancelled or failed: after_run is not called
        raise error

    def _loop_id(self, ctx: Any) -> str:
        return self._delegated.get(ctx.run_id) or loop_id_of(ctx)

    def _publish(self, ctx: Any, call: Any, args: Any, **outcome: Any) -> None:
        started = self._started.pop(call.tool_call_id, None)
        self._guard.tool_call(
            self._loop_id(ctx),
            call.tool_name,
            args,
            tool_call_id=call.tool_call_id,
            duration_ms=None if started is None else (time.perf_counter() - started) * 1000,
            **outcome,
        )


def _task(prompt: Any) -> str | None:
    """The task a delegated run was given: its prompt, as text."""
    if prompt is None:
        return None
    if isinstance(prompt, str):
        return prompt
    return " ".join(str(part) for part in prompt if isinstance(part, str)) or None
