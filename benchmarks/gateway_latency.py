"""Benchmark: what ``loopwarden gateway`` adds to each model request.

A scripted model server (``tests/support/scripted_model.py``: answers at once, always
the same tool call) is asked directly and through the gateway, alternately, by the
``openai`` SDK: a Chat Completions agent that keeps running the same command, each
request carrying one more tool result. Per request, the time to the whole answer
(non-streamed) and to the first streamed chunk; the gateway's figure minus the direct
one of the same step is what it adds (publish the step, wait for the verdict, forward).
Three settings: the worker healthy (the default profile: warnings come, and the
ladder's stop is answered by the gateway itself, counted apart), **no worker** (the
broker up, nobody answering: every step waits the verdict bound), and **no broker**
(every request forwarded unwatched). Prints a table, writes JSON to
``benchmarks/results/``.

    .venv/bin/python benchmarks/gateway_latency.py --requests 60
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
import uuid
from pathlib import Path

import openai
from bench_measure import bench_broker, percentile, write_results

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from gateway_process import GatewayProcess
from scripted_model import ScriptedModel

from loopwarden.agents.capabilities import CAPABILITIES
from loopwarden.cli.runtime import start_worker_process, stop_process
from loopwarden.schemas.tool_calls import STOP_HEADER
from loopwarden.settings import Settings
from loopwarden.streams.tools.broker import free_port
from loopwarden.streams.tools.topics import ensure_topics

TOOLS = [{"type": "function", "function": {"name": "run_command", "parameters": {}}}]


def timed(client: openai.OpenAI, messages: list, stream: bool) -> tuple[float, str | None]:
    """(ms to the whole answer or its first chunk, the answer's text: None for a tool call)."""
    started = time.perf_counter()
    if not stream:
        answer = client.chat.completions.create(model="m", messages=messages, tools=TOOLS)
        message = answer.choices[0].message
        return (
            time.perf_counter() - started
        ) * 1000, None if message.tool_calls else message.content
    first, text = None, ""
    with client.chat.completions.create(
        model="m", messages=messages, tools=TOOLS, stream=True
    ) as chunks:
        for chunk in chunks:
            first = first or (time.perf_counter() - started) * 1000
            for choice in chunk.choices:
                text += choice.delta.content or ""
    return first or 0.0, text or None


def measure(gateway_url: str, model_url: str, requests: int, stream: bool) -> dict:
    """Added ms per request (gateway − direct, same step), and the stops answered."""
    direct = openai.OpenAI(base_url=f"{model_url}/v1", api_key="sk-bench", max_retries=0)
    through = openai.OpenAI(base_url=f"{gateway_url}/v1", api_key="sk-bench", max_retries=0)
    added, stops, n = [], 0, 0
    while n < requests:
        messages = [{"role": "user", "content": f"fix the tests {uuid.uuid4().hex}"}]
        for step in range(30):
            base, _ = timed(direct, messages, stream)
            ms, text = timed(through, messages, stream)
            n += 1
            if text is not None:
                stops += text.startswith(STOP_HEADER)
                break
            added.append(ms - base)
            messages.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": f"c{step}", "type": "function",
                 "function": {"name": "run_command", "arguments": "{}"}}]})  # fmt: skip
            messages.append({"role": "tool", "tool_call_id": f"c{step}", "content": "1 failed"})
            if n >= requests:
                break
    return {"requests": n, "added_ms_p50": percentile(added, 0.5),
            "added_ms_p99": percentile(added, 0.99), "stops": stops}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--broker", default="embedded", help="embedded or kafka")
    args = parser.parse_args()
    rows: dict[str, dict] = {}
    with (
        tempfile.TemporaryDirectory() as home,
        bench_broker(args.broker) as broker,
        ScriptedModel() as model,
    ):
        for setting in ("worker healthy", "no worker", "no broker"):
            tag = f"gwlat{uuid.uuid4().hex[:6]}"
            servers = (
                broker.bootstrap_servers if setting != "no broker" else f"127.0.0.1:{free_port()}"
            )
            settings = Settings().namespaced(tag, bootstrap_servers=servers)
            memory = settings.memory.model_copy(update={"uri": f"{home}/{tag}-m"})
            settings = settings.model_copy(update={"data_dir": f"{home}/{tag}", "memory": memory})
            worker = None
            if setting != "no broker":
                asyncio.run(ensure_topics(settings, CAPABILITIES))
            if setting == "worker healthy":
                worker = start_worker_process(settings, f"{home}/{tag}-worker.log")
            gateway = GatewayProcess(settings, model.url, f"{home}/{tag}-gateway.log")
            url = gateway.url
            try:
                gateway.wait_ready(broker=setting != "no broker")
                if worker is not None:  # the worker answers: its group is joined
                    measure(url, model.url, 12, False)
                for stream in (False, True):
                    rows[f"{setting}, {'first chunk' if stream else 'whole'}"] = measure(
                        url, model.url, args.requests, stream
                    )
            finally:
                gateway.stop()
                if worker is not None:
                    stop_process(worker)
    print(f"{'setting':<32}{'requests':>9}{'added p50 ms':>14}{'p99':>8}{'stops':>7}")
    for name, row in rows.items():
        print(f"{name:<32}{row['requests']:>9}{row['added_ms_p50']:>14.1f}"
              f"{row['added_ms_p99']:>8.1f}{row['stops']:>7}")  # fmt: skip
    write_results("gateway_latency", {"args": vars(args), "rows": rows})


if __name__ == "__main__":
    main()
