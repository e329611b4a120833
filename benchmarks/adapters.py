"""Framework adapters: what they cost the agent, and how soon a verdict comes back.

1. **Cost in the agent's thread** of publishing one tool call (``LoopGuard.tool_call``:
   the call is handed to the guard's thread, which builds, validates, redacts and sends
   it), against a no-op call with the same arguments; connected, and with the broker
   down (the calls queue).
2. **A LangChain agent run** (LangChain's fake chat model, 200 distinct tool calls, no
   warnings) with ``LoopwardenMiddleware`` against the same run without it and with a
   middleware that has the same hooks doing nothing (LangGraph's own share of the
   cost: each hook is a graph node): per-step cost and the ratio.
3. **Verdict latency**: from the 4th identical call of a loop (the first finding of the
   ``patterns`` profile) to its warning in the guard's inbox, over fresh loops.

The LangChain steps are measured without the adapters' verdict wait
(``adapters.verdict_wait_ms``): what that wait costs and buys is
``benchmarks/warning_delivery.py``.

One embedded broker and one worker (``patterns`` profile), on this machine's shared
cores; topics stay small (a few thousand records), so the embedded broker's slowdown
on long topics does not apply.

    .venv/bin/python benchmarks/adapters.py            # ~1 min
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

from bench_measure import patterns_worker
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from loopwarden.adapters.guard import LoopGuard
from loopwarden.adapters.langchain import LoopwardenMiddleware
from loopwarden.settings import Settings
from loopwarden.streams.tools.broker import free_port

RESULTS = Path(__file__).parent / "results"


def per_call_us(function: Any, calls: int) -> float:
    started = time.perf_counter()
    for n in range(calls):
        function("bench-loop", "search", {"q": n}, result="r", tool_call_id=f"c{n}")
    return (time.perf_counter() - started) / calls * 1e6


def noop(*args: Any, **kwargs: Any) -> None:
    return None


class Model(GenericFakeChatModel):
    def bind_tools(self, tools: Any, **kwargs: Any) -> Model:
        return self


@tool
def search(query: str) -> str:
    """Search."""
    return f"results for {query}"


class NullMiddleware(LoopwardenMiddleware):
    """The same hooks (so the same graph nodes) doing nothing: LangGraph's share."""

    def before_agent(self, state: Any, runtime: Any) -> None:
        return None

    def before_model(self, state: Any, runtime: Any) -> None:
        return None

    def after_model(self, state: Any, runtime: Any) -> None:
        return None

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        return handler(request)

    def after_agent(self, state: Any, runtime: Any) -> None:
        return None

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        return handler(request)


def langchain_run_ms(steps: int, middleware: list) -> float:
    script = [
        AIMessage("", tool_calls=[{"name": "search", "args": {"query": f"q{n}"}, "id": f"c{n}"}])
        for n in range(steps)
    ]
    model = Model(messages=iter([*script, AIMessage("done")]))
    agent = create_agent(model, [search], middleware=middleware)
    config = {"configurable": {"thread_id": f"bench-{uuid.uuid4().hex}"}, "recursion_limit": 10_000}
    started = time.perf_counter()
    agent.invoke({"messages": [{"role": "user", "content": "go"}]}, config)
    return (time.perf_counter() - started) * 1000


def verdict_latencies_ms(guard: LoopGuard, loops: int) -> list[float]:
    latencies = []
    for _ in range(loops):
        loop_id = f"verdict-{uuid.uuid4().hex[:8]}"
        for n in range(3):
            guard.tool_call(loop_id, "search", {"q": "x"}, result="same", tool_call_id=f"c{n}")
        started = time.perf_counter()
        guard.tool_call(loop_id, "search", {"q": "x"}, result="same", tool_call_id="c3")
        assert guard.inbox.wait(loop_id, count=1, timeout_s=30), "no warning"
        latencies.append((time.perf_counter() - started) * 1000)
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--loops", type=int, default=30)
    args = parser.parse_args()
    rows: dict[str, Any] = {}

    down = Settings().namespaced("down", bootstrap_servers=f"127.0.0.1:{free_port()}")
    with LoopGuard(down, retry_s=60) as offline:
        rows["tool_call_us_broker_down"] = per_call_us(offline.tool_call, args.calls)
    rows["noop_call_us"] = per_call_us(noop, args.calls)

    with patterns_worker("bench") as settings, LoopGuard(settings) as guard:
        assert guard.wait_ready(60)
        verdict_latencies_ms(guard, 3)  # the worker's group is joined and warm
        rows["tool_call_us_connected"] = per_call_us(guard.tool_call, args.calls)
        # the middleware's own work per step: no verdict wait (its cost, a bounded wait
        # on every healthy step, is measured by warning_delivery.py)
        guard.verdict_wait_s = 0.0
        plain = [langchain_run_ms(args.steps, []) for _ in range(5)]
        hooks_only = [langchain_run_ms(args.steps, [NullMiddleware(guard)]) for _ in range(5)]
        watched = [langchain_run_ms(args.steps, [LoopwardenMiddleware(guard)]) for _ in range(5)]
        latencies = verdict_latencies_ms(guard, args.loops)

    rows["langchain_step_ms_plain"] = statistics.median(plain) / args.steps
    rows["langchain_step_ms_empty_hooks"] = statistics.median(hooks_only) / args.steps
    rows["langchain_step_ms_middleware"] = statistics.median(watched) / args.steps
    rows["langchain_ratio"] = statistics.median(watched) / statistics.median(plain)
    ordered = sorted(latencies)
    rows["verdict_ms_p50"] = statistics.median(ordered)
    rows["verdict_ms_p95"] = ordered[int(0.95 * (len(ordered) - 1))]
    rows["verdict_ms_max"] = ordered[-1]

    print(f"{'measure':40} {'value':>12}")
    for name, value in rows.items():
        print(f"{name:40} {value:12.2f}")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "adapters.json").write_text(json.dumps({"args": vars(args), **rows}, indent=2))


if __name__ == "__main__":
    main()
