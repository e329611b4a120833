"""Benchmark: does a warning reach the agent's very next model call, and what does it cost?

Each framework adapter (LangChain, Pydantic AI, OpenAI Agents) runs a spinning agent
whose model answers at once (the same tool call every time, the framework's own fake
model), against one broker (``--brokers``: the embedded one, Apache Kafka) and one
worker (``patterns`` profile: the 4th identical call is the first finding, the 10th the
stop). Three settings, each with a worker of its own on fresh topics:

- ``no wait``: the guard's bound 0 (the baseline, as before the wait existed);
- ``bound only``: the default bound (``adapters.verdict_wait_ms``), the worker sending
  no verdicts (``adapters.verdicts`` off: as before verdicts existed), so a healthy step
  waits the bound out;
- ``verdicts``: the default bound and the worker's verdict on every event.

Per adapter and setting, over fresh loops:

- **on time**: runs whose first warning was in the request right after the 4th call;
  **late**: the mean number of requests it came after that;
- **tool → injection**: from the 4th call's tool returning to the start of the model
  request that carried the warning (median, slowest);
- **healthy step**: from a tool returning to the next model request on the steps before
  the first finding (what every step of a healthy run pays), p50 and p99;
- **stopped on time**: runs that ended before an 11th model request.

And what the verdicts cost the worker (``--cost-events`` events of the real workload,
published at once to the worker of each of the last two settings, on its own topics):
its CPU per event until caught up, and the bytes of the verdicts topic per event.

An instant model is the worst case for the wait (a real model's own latency of
0.5–5 s comes on top of it). JSON to ``benchmarks/results/warning_delivery.json``.

    .venv/bin/python benchmarks/warning_delivery.py                       # ~2 min
    .venv/bin/python benchmarks/warning_delivery.py --brokers embedded,kafka
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agents import Agent as OpenAIAgent
from agents import Runner, function_tool
from agents.exceptions import ToolInputGuardrailTripwireTriggered
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from bench_measure import (
    bench_broker,
    kafka_worker_settings,
    percentile,
    process_cpu_s,
    publish,
    wait_caught_up,
)
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
from loopwarden.agents.capabilities import CAPABILITIES
from loopwarden.cli.runtime import start_worker_process, stop_process
from loopwarden.schemas.tool_calls import CONTEXT_HEADER
from loopwarden.settings import Settings
from loopwarden.streams.tools.replay_reader import TopicRangeReader
from loopwarden.streams.tools.topics import ensure_topics

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
    """The figures of one adapter at one setting (module docstring)."""
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
        "healthy_step_ms_p50": percentile(healthy, 0.5),
        "healthy_step_ms_p99": percentile(healthy, 0.99),
        "healthy_steps": len(healthy),
        "stopped_on_time": stopped,
    }


def fmt(value: float | int | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


SETTINGS = {"no wait": (0.0, False), "bound only": (None, False), "verdicts": (None, True)}
"""Setting → (the guard's bound in ms, None: the default; the worker's verdicts)."""


def worker_settings(broker: Any, kind: str, tag: str, home: str, verdicts: bool) -> Settings:
    """A ``patterns`` worker's settings on topics of its own, with or without verdicts."""
    settings = Settings().namespaced(tag, bootstrap_servers=broker.bootstrap_servers)
    if kind == "kafka":
        settings = kafka_worker_settings(settings)
    return settings.model_copy(
        update={
            "detection": settings.detection.model_copy(update={"profile": "patterns"}),
            "adapters": settings.adapters.model_copy(update={"verdicts": verdicts}),
            "memory": settings.memory.model_copy(update={"uri": f"{home}/{tag}-memory"}),
            "data_dir": f"{home}/{tag}-data",
        }
    )


def measure_delivery(settings: Settings, bound_ms: float, runs: int) -> dict[str, Any]:
    """Every adapter's figures (``runs`` spinning runs each) through one guard."""
    rows: dict[str, Any] = {}
    with LoopGuard(settings) as guard:
        assert guard.wait_ready(60)
        for n in range(WARN_AT):  # the worker's group is joined and warm
            guard.tool_call("warm-up", "probe", {}, result="same", tool_call_id=f"w{n}")
        assert guard.inbox.wait("warm-up", count=1, timeout_s=120), "worker not up"
        guard.verdict_wait_s = bound_ms / 1000
        for name, run in ADAPTERS.items():
            traces = []
            for _ in range(runs):
                trace = Trace()
                run(guard, trace)
                traces.append(trace)
            rows[name] = summarise(traces)
    return rows


def measure_cost(settings: Settings, pid: int, events: int) -> dict[str, float | None]:
    """The worker's CPU per event over ``events`` real events, and verdict bytes per event."""
    from workloads import real

    prepared = real(events, 500, 7, settings.app_id)
    before = process_cpu_s(pid)
    asyncio.run(publish(settings, prepared, None, "batched"))
    behind = asyncio.run(wait_caught_up(settings, [settings.topics.actions], 300))
    after = process_cpu_s(pid)
    cpu_us = None if before is None or after is None else (after - before) / events * 1e6
    size = asyncio.run(topic_bytes(settings, settings.topics.verdicts))
    return {"events": events, "behind": behind, "cpu_us_per_event": cpu_us,
            "verdict_bytes_per_event": size / events}  # fmt: skip


async def topic_bytes(settings: Settings, topic: str) -> int:
    """The bytes of the values (and keys) on ``topic``, read to its true end."""
    total = 0
    async with TopicRangeReader(settings.kafka.bootstrap_servers) as reader:
        async for records in reader.read(await reader.whole(topic)):
            total += sum(len(r.value or b"") + len(r.key or b"") for r in records)
    return total


def run_broker(kind: str, args: argparse.Namespace) -> dict[str, Any]:
    """Every setting's rows (and the cost of verdicts) on one broker of ``kind``."""
    default_ms = Settings().adapters.verdict_wait_ms
    found: dict[str, Any] = {"rows": {}, "cost": {}}
    with tempfile.TemporaryDirectory() as home, bench_broker(kind) as broker:
        for setting, (bound, verdicts) in SETTINGS.items():
            tag = f"wd{setting.replace(' ', '')}{uuid.uuid4().hex[:4]}"
            settings = worker_settings(broker, kind, tag, home, verdicts)
            asyncio.run(ensure_topics(settings, CAPABILITIES))
            worker = start_worker_process(settings, f"{home}/{tag}-worker.log")
            try:
                rows = measure_delivery(settings, default_ms if bound is None else bound, args.runs)
                for adapter, row in rows.items():
                    found["rows"][f"{adapter} @ {setting}"] = row
                if setting != "no wait" and args.cost_events:
                    found["cost"][setting] = measure_cost(settings, worker.pid, args.cost_events)
            finally:
                stop_process(worker)
    return found


def print_broker(kind: str, found: dict[str, Any]) -> None:
    print(f"\n{kind}:")
    print(
        f"{'adapter @ setting':<28}{'on time':>9}{'late':>7}{'inject ms':>11}{'max':>8}"
        f"{'healthy p50':>13}{'p99':>8}{'stopped':>9}"
    )
    for name, row in found["rows"].items():
        print(
            f"{name:<28}{row['on_time']:>5}/{row['runs']:<3}{fmt(row['late_mean'], '.2f'):>7}"
            f"{fmt(row['injection_ms_median'], '.1f'):>11}{fmt(row['injection_ms_max'], '.1f'):>8}"
            f"{fmt(row['healthy_step_ms_p50'], '.1f'):>13}"
            f"{fmt(row['healthy_step_ms_p99'], '.1f'):>8}"
            f"{row['stopped_on_time']:>5}/{row['runs']}"
        )
    for setting, cost in found["cost"].items():
        print(
            f"worker cost, {setting:<11}: {fmt(cost['cpu_us_per_event'], '.0f')} µs CPU/event, "
            f"{cost['verdict_bytes_per_event']:.0f} verdict bytes/event "
            f"({cost['events']} events, {cost['behind']} left behind)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8, help="spinning runs per adapter and setting")
    parser.add_argument("--brokers", default="embedded", help="embedded, kafka or both (comma)")
    parser.add_argument(
        "--cost-events", type=int, default=20_000, help="real events for the cost (0: skip)"
    )
    args = parser.parse_args()
    results = {}
    for kind in args.brokers.split(","):
        results[kind] = run_broker(kind, args)
        print_broker(kind, results[kind])
    RESULTS.mkdir(exist_ok=True)
    out = {"args": vars(args), "default_wait_ms": Settings().adapters.verdict_wait_ms,
           "brokers": results}  # fmt: skip
    (RESULTS / "warning_delivery.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
