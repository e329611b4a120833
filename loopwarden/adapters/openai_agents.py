"""OpenAI Agents SDK: run hooks, a model-input filter and a tool guardrail.

>>> from agents import Runner
>>> from loopwarden.adapters.openai_agents import watch
>>> result = await Runner.run(agent, "task", **watch(loop_id="conversation-7"))

``watch`` returns ``hooks`` and ``run_config`` for ``Runner.run`` (pass your own
``run_config`` to have the filter added to it; its own input filter runs first):

- every tool call is published (``RunHooks.on_tool_end``): the tool name as action
  type, its arguments, the result, the call's ``tool_call_id`` and the acting agent's
  name as ``agent`` (after a handoff, another agent acts in the same run); a result
  that is the SDK's default tool-error text counts as a failure;
- the conversation's turns: the user messages the run starts with (those after the
  last answer in its input, at the first ``RunHooks.on_llm_start``) as the
  counterpart's turns, and each model response without a tool call
  (``RunHooks.on_llm_end``) as the acting agent's message turn, so an agent asking
  again for what the person keeps answering is seen;
- before each model call (``RunConfig.call_model_input_filter``) it waits, bounded
  (``adapters.verdict_wait_ms``), for the verdict on the tool results just published,
  and the run's warnings are added to that call's instructions: the model reads a
  warning in the very next call, and every later one, without an input item kept in
  the history;
- with ``adapters.memory_scope`` set, what earlier runs learned that fits the run's
  request (the worker's memory search, once per run) goes into the same instructions;
- a ``stop`` recommendation ends the run: before the next model call with
  :class:`LoopwardenStopped` (an ``AgentsException``), and at a tool call already on
  its way with the SDK's own ``ToolInputGuardrailTripwireTriggered`` — loopwarden's
  tool input guardrail is attached to the agents' function tools when they start;
- the end of the run is published as a terminating turn (``on_agent_end``).

Install with ``pip install 'loopwarden[openai-agents]'``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import uuid
from typing import Any

from agents import FunctionTool, RunConfig, RunHooks
from agents.exceptions import AgentsException
from agents.run_config import CallModelData, CallModelInputFilter, ModelInputData
from agents.tool import default_tool_error_function
from agents.tool_guardrails import ToolGuardrailFunctionOutput, ToolInputGuardrail

from loopwarden.adapters.guard import LoopGuard, shared_guard
from loopwarden.schemas.tool_calls import (
    is_injected,
    stop_text,
    tool_call_fields,
    turn_text,
)
from loopwarden.schemas.warnings import LoopWarning

GUARDRAIL_NAME = "loopwarden_stop"
_TOOL_ERROR_TEXT = default_tool_error_function(None, Exception())  # type: ignore[arg-type]


class LoopwardenStopped(AgentsException):
    """The run was ended because loopwarden recommended a stop."""

    def __init__(self, warning: LoopWarning) -> None:
        super().__init__(stop_text(warning))
        self.warning = warning


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


def unanswered_user_turns(items: list[Any]) -> list[str]:
    """The texts of the user messages after the last other item of a model input (an
    answer, a tool call or its output), loopwarden's own injected warnings left out."""
    turns: list[str] = []
    for item in items:
        if _field(item, "role") != "user":
            turns = []
            continue
        text = turn_text(_field(item, "content"))
        if text is not None and not is_injected(text):
            turns.append(text)
    return turns


def answer_text(output: list[Any]) -> str | None:
    """A model response's text when it calls no tool (its message items' text)."""
    kinds = [str(_field(item, "type") or "") for item in output]
    if any(kind.endswith("_call") for kind in kinds):
        return None  # a tool call (function_call, web_search_call, …): published as it runs
    messages = [item for item, kind in zip(output, kinds, strict=True) if kind == "message"]
    return turn_text([turn_text(_field(item, "content")) for item in messages])


class LoopwardenRun(RunHooks[Any]):
    """One run's connection to loopwarden: its hooks, input filter and tool guardrail."""

    def __init__(self, loop_id: str, guard: LoopGuard) -> None:
        super().__init__()
        self.loop_id = loop_id
        self.guard = guard
        self.user_filter: CallModelInputFilter | None = None
        """The run config's own input filter, applied first."""
        self.stopped: LoopWarning | None = None
        self._heard = False
        self._recalled = False
        guard.watch(loop_id)

    # -- hooks ---------------------------------------------------------------------------------

    async def on_agent_start(self, context: Any, agent: Any) -> None:
        for tool in getattr(agent, "tools", ()):
            if isinstance(tool, FunctionTool):
                guardrails = list(tool.tool_input_guardrails or [])
                if all(g.get_name() != GUARDRAIL_NAME for g in guardrails):
                    tool.tool_input_guardrails = [*guardrails, STOP_GUARDRAIL]

    async def on_llm_start(
        self, context: Any, agent: Any, system_prompt: str | None, input_items: list[Any]
    ) -> None:
        if not self._heard:  # the person speaks between runs: their turns open the input
            self._heard = True
            for text in unanswered_user_turns(input_items):
                self.guard.heard(self.loop_id, text)

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        text = answer_text(list(getattr(response, "output", None) or []))
        if text is None:
            return
        fields = {"response_id": getattr(response, "response_id", None)}
        fields["agent"] = getattr(agent, "name", None)
        self.guard.said(self.loop_id, text, **{k: v for k, v in fields.items() if v})

    async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
        name = str(getattr(context, "tool_name", None) or getattr(tool, "name", "tool"))
        error = result if result == _TOOL_ERROR_TEXT else None
        self.guard.publish(
            self.loop_id,
            name,
            **tool_call_fields(
                getattr(context, "tool_arguments", None),
                result=None if error else result,
                error=error,
                tool_call_id=getattr(context, "tool_call_id", None),
                tool=name,
            ),
            # after a handoff another agent acts in the same run: the fleet role sees
            # two agents passing the same request back and forth
            **({"agent": agent.name} if getattr(agent, "name", None) else {}),
        )

    async def on_agent_end(self, context: Any, agent: Any, output: Any) -> None:
        if self.stopped is None:
            self.guard.end(self.loop_id, reason="finalized")

    # -- inject / stop -------------------------------------------------------------------------

    async def filter_model_input(self, data: CallModelData[Any]) -> ModelInputData:
        """``RunConfig.call_model_input_filter``: the verdict on the tool results just
        published awaited (bounded), then the run stopped, or its warnings added to this
        call's instructions (after the filter the caller's run config already had)."""
        await asyncio.to_thread(self.guard.await_verdict, self.loop_id)
        self._raise_if_stopped()
        model_data = data.model_data
        if not self._recalled:  # the run's request: what the person said last
            self._recalled = True
            request = "\n".join(unanswered_user_turns(list(model_data.input)))
            await asyncio.to_thread(self.guard.recall, self.loop_id, request)
        if self.user_filter is not None:
            filtered = self.user_filter(data)
            model_data = await filtered if inspect.isawaitable(filtered) else filtered
        note = self.guard.note(self.loop_id)
        if note is None:
            return model_data
        instructions = f"{model_data.instructions}\n\n{note}" if model_data.instructions else note
        return ModelInputData(input=model_data.input, instructions=instructions)

    def check_tool_call(self) -> ToolGuardrailFunctionOutput:
        """The tool guardrail's verdict for this run."""
        stop = self.guard.stop_for(self.loop_id)
        if stop is None:
            return ToolGuardrailFunctionOutput.allow()
        self._record_stop(stop)
        return ToolGuardrailFunctionOutput.raise_exception(output_info=stop_text(stop))

    def _raise_if_stopped(self) -> None:
        stop = self.guard.stop_for(self.loop_id)
        if stop is not None:
            self._record_stop(stop)
            raise LoopwardenStopped(stop)

    def _record_stop(self, stop: LoopWarning) -> None:
        if self.stopped is None:
            self.stopped = stop
            self.guard.end(self.loop_id, reason="spin", success=False)


def _stop_tool_call(data: Any) -> ToolGuardrailFunctionOutput:
    """One guardrail for every tool: it finds the run it guards through the run's config
    (tools are shared between agents and runs; runs without loopwarden are allowed)."""
    config = getattr(data.context, "run_config", None)
    run = getattr(getattr(config, "call_model_input_filter", None), "__self__", None)
    if not isinstance(run, LoopwardenRun):
        return ToolGuardrailFunctionOutput.allow()
    return run.check_tool_call()


STOP_GUARDRAIL: ToolInputGuardrail[Any] = ToolInputGuardrail(
    guardrail_function=_stop_tool_call, name=GUARDRAIL_NAME
)


def watch(
    loop_id: str | None = None,
    *,
    guard: LoopGuard | None = None,
    run_config: RunConfig | None = None,
) -> dict[str, Any]:
    """``hooks`` and ``run_config`` for ``Runner.run``/``run_sync``/``run_streamed``,
    publishing under ``loop_id`` (default: a fresh id per run)."""
    run = LoopwardenRun(loop_id or f"openai-agents-{uuid.uuid4().hex}", guard or shared_guard())
    run_config = run_config or RunConfig()
    run.user_filter = run_config.call_model_input_filter
    config = dataclasses.replace(run_config, call_model_input_filter=run.filter_model_input)
    return {"hooks": run, "run_config": config}
