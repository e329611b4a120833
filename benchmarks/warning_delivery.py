"""Benchmark: does a warning reach the agent's very next model call, and what does it cost?

Each framework adapter (LangChain, Pydantic AI, OpenAI Agents) runs a spinning agent
whose model answers at once (the same tool call every time, the framework's own fake
model), against one embedded broker and one worker (``patterns`` profile: the 4th
identical call is the first finding, the 10th the stop), with the adapters' verdict
wait off (0 ms: the baseline, as before the wait existed) and at its default
(``adapters.verdict_wait_ms``). Per adapter and bound, over fresh loops:

- **on time**: runs whose first warning was in the request right after the 4th call;
  **late**: the mean number of requests it came after that;
- **tool → injection**: from the 4th call's tool returning to the start of the model
  request that carried the warning (median, slowest);
- **healthy step**: the mean time from a tool returning to the next model request on
  the steps before the first finding (what every step of a healthy run pays);
- **stopped on time**: runs that ended before an 11th model request.

An instant model is the worst case for the wait (a real model's own latency of
0.5–5 s comes on top of it). JSON to ``benchmarks/results/warning_delivery.json``.

    .venv/bin/python benchmarks/warning_delivery.py            # ~1 min
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agents import Agent as OpenAIAgent
from agents import Runner, function_tool
from agents.exceptions import ToolInputGuardrailTripwireTriggered
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from bench_measure import patterns_worker
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.exceptions import RunCancelled
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import FunctionModel

from loopwarden.adapters.guard import LoopGuard
from loopwarden.adapters.langchain import LoopwardenMiddleware
from loopwarden.adapters.openai_agents import LoopwardenStopped, watch
from loopwarden.adapters.pydantic_ai import Loopwarden
from loopwarden.schemas.tool_calls import CONTEXT_HEADER
from loopwarden.settings import Settings

RESULTS = Path(__file__).parent / "results"
WARN_AT, STOP_AT, MAX_CALLS = 4, 10, 16


class Trace:
    """One run: when each tool call returned, and each model request with its note."""

    def __init__(self) -> None:
        self.tools: list[float] = []
        self.requests: list[tuple[float, bool]] = []

    def tool(self) -> str:
        self.tools.append(time.perf_counter())
        return "nothing found"

    def request(self, text: str) -> None:
        self.requests.append((time.perf_counter(), CONTEXT_HEADER in text))


def run_langchain(guard: LoopGuard, trace: Trace) -> None:
    class Model(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Model:
            return self

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any):
            trace.request(" ".join(str(m.content) for m in messages))
            return super()._generate(messages, stop=stop, run_manager=run_manager, **kw)

    def search(query: str) -> str:
        """Search."""
        return trace.tool()

    calls = [
        AIMessage("", tool_calls=[{"name": "search", "args": {"query": "x"}, "id": f"c{n}"}])
        for n in range(MAX_CALLS)
    ]
    script = iter([*calls, AIMessage("gave up")])
    agent = create_agent(Model(messages=script), [search], middleware=[LoopwardenMiddleware(guard)])
    config = {"configurable": {"thread_id": f"lc-{uuid.uuid4().hex}"}, "recursion_limit": 100}
    agent.invoke({"messages": [{"role": "user", "content": "find x"}]}, config)


def run_pydantic_ai(guard: LoopGuard, trace: Trace) -> None:
    def respond(messages: list, info: Any) -> ModelResponse:
        trace.request(str(messages[-1].instructions))
        if len(trace.requests) > MAX_CALLS:
            return ModelResponse(parts=[TextPart("gave up")])
        call = ToolCallPart("search", {"query": "x"}, tool_call_id=f"c{len(trace.requests)}")
        return ModelResponse(parts=[call])

    def search(query: str) -> str:
        """Search."""
        return trace.tool()

    agent = PydanticAgent(FunctionModel(respond), tools=[search], capabilities=[Loopwarden(guard)])
    with contextlib.suppress(RunCancelled):
        agent.run_sync("find x", conversation_id=f"pai-{uuid.uuid4().hex}")


def run_openai_agents(guard: LoopGuard, trace: Trace) -> None:
    async def respond(call: Any) -> list:
        trace.request(str(call.system_instructions))
        return [function_call("search", {"query": "x"}, call_id=uuid.uuid4().hex[:8])]

    @function_tool
    def search(query: str) -> str:
        """Search."""
        return trace.tool()

    steps = [ModelStep.respond(respond) for _ in range(MAX_CALLS)]
    model = ScriptedModel([*steps, [assistant_message("gave up")]])
    agent = OpenAIAgent(name="spinner", model=model, tools=[search])
    run = watch(f"oai-{uuid.uuid4().hex}", guard=guard)
    with contextlib.suppress(LoopwardenStopped, ToolInputGuardrailTripwireTriggered):
        asyncio.run(Runner.run(agent, "find x", max_turns=50, **run))


ADAPTERS: dict[str, Callable[[LoopGuard, Trace], None]] = {
    "langchain": run_langchain,
    "pydantic_ai": run_pydantic_ai,
    "openai_agents": run_openai_agents,
}


def summarise(traces: list[Trace]) -> dict[str, float | int | None]:
    """The figures of one adapter at one bound (module docstring)."""
    late, injection, healthy, stopped = [], [], [], 0
    for trace in traces:
        first = next((k for k, (_t, noted) in enumerate(trace.requests) if noted), None)
        if first is not None:
            late.append(first - WARN_AT)
            if len(trace.tools) >= WARN_AT:
                injection.append((trace.requests[first][0] - trace.tools[WARN_AT - 1]) * 1000)
        healthy += [
            (trace.requests[k][0] - trace.tools[k - 1]) * 1000
            for k in range(1, WARN_AT)
            if k < len(trace.requests)
        ]
        stopped += len(trace.requests) <= STOP_AT
    return {
        "runs": len(traces),
        "on_time": sum(1 for n in late if n == 0),
        "late_mean": statistics.mean(late) if late else None,
        "injection_ms_median": statistics.median(injection) if injection else None,
        "injection_ms_max": max(injection) if injection else None,
        "healthy_step_ms_mean": statistics.mean(healthy) if healthy else None,
        "stopped_on_time": stopped,
    }


def fmt(value: float | int | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8, help="spinning runs per adapter and bound")
    args = parser.parse_args()
    default_ms = Settings().adapters.verdict_wait_ms
    rows: dict[str, dict[str, Any]] = {}
    with patterns_worker("delivery") as settings, LoopGuard(settings) as guard:
        assert guard.wait_ready(60)
        for n in range(WARN_AT):  # the worker's group is joined and warm
            guard.tool_call("warm-up", "probe", {}, result="same", tool_call_id=f"w{n}")
        assert guard.inbox.wait("warm-up", count=1, timeout_s=90), "worker not up"
        for name, run in ADAPTERS.items():
            for bound_ms in (0.0, default_ms):
                guard.verdict_wait_s = bound_ms / 1000
                traces = []
                for _ in range(args.runs):
                    trace = Trace()
                    run(guard, trace)
                    traces.append(trace)
                rows[f"{name} @ {bound_ms:.0f} ms"] = summarise(traces)

    print(
        f"{'adapter @ verdict wait':<28}{'on time':>9}{'late':>7}{'inject ms':>11}"
        f"{'max':>8}{'healthy step ms':>17}{'stopped':>9}"
    )
    for name, row in rows.items():
        print(
            f"{name:<28}{row['on_time']:>5}/{row['runs']:<3}{fmt(row['late_mean'], '.2f'):>7}"
            f"{fmt(row['injection_ms_median'], '.1f'):>11}{fmt(row['injection_ms_max'], '.1f'):>8}"
            f"{fmt(row['healthy_step_ms_mean'], '.1f'):>17}"
            f"{row['stopped_on_time']:>5}/{row['runs']}"
        )
    RESULTS.mkdir(exist_ok=True)
    out = {"args": vars(args), "default_wait_ms": default_ms, "rows": rows}
    (RESULTS / "warning_delivery.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
