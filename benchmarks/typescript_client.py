"""Benchmark: how soon a warning reaches an agent through the TypeScript client, beside
the Python client on the same broker and worker.

One embedded broker and one worker (``patterns`` profile: the 4th identical call is the
first finding). Per round, alternated, over fresh loops: the Python client
(``AsyncPublisher`` and one ``WarningSubscriber`` for every loop) and the TypeScript
package (``Publisher`` and ``WarningSubscriber``, benchmarks/typescript_latency.mjs) at
its default fetch wait (100 ms) and at kafkajs's own default (5,000 ms). Each loop
publishes the same failing call four times; the latency is from the triggering event's
``publish`` to its warning's arrival. The TypeScript subscriber's group join is not
timed. Needs Node 20 and the built package (``make typescript-build``).

    .venv/bin/python benchmarks/typescript_client.py            # ~5 min
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import time
import uuid
from pathlib import Path

from bench_measure import patterns_worker, percentile, write_results

from loopwarden.settings import Settings, settings_env
from loopwarden.streams.client.publisher import AsyncPublisher
from loopwarden.streams.client.subscriber import WarningSubscriber

HERE = Path(__file__).resolve().parent
PACKAGE = HERE.parent / "clients" / "typescript"
CALLS = 4


async def python_round(settings: Settings, loops: list[str]) -> list[float | None]:
    sent: dict[str, float] = {}
    latencies: list[float | None] = []
    async with WarningSubscriber(settings) as subscriber, AsyncPublisher(settings) as publisher:
        warnings = aiter(subscriber)
        for loop_id in loops:
            for _ in range(CALLS):
                event_id = await publisher.publish(
                    loop_id,
                    "deploy",
                    params={"env": "prod"},
                    success=False,
                    error_message="permission denied: ./deploy.sh",
                )
                sent[event_id] = time.perf_counter()
            latency = None
            deadline = time.perf_counter() + 30
            while latency is None and time.perf_counter() < deadline:
                try:
                    warning = await asyncio.wait_for(anext(warnings), 30)
                except TimeoutError:
                    break
                if warning.loop_id == loop_id and warning.trigger_event_id in sent:
                    latency = (time.perf_counter() - sent[warning.trigger_event_id]) * 1000
            latencies.append(latency)
    return latencies


def typescript_round(settings: Settings, loops: list[str], max_wait_ms: int) -> list[float | None]:
    job = json.dumps({"loops": loops, "calls": CALLS, "maxWaitMs": max_wait_ms})
    done = subprocess.run(
        ["node", str(HERE / "typescript_latency.mjs")],
        input=job,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **settings_env(settings)},
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"typescript_latency.mjs failed:\n{done.stderr}")
    return json.loads(done.stdout)["latencies_ms"]


def summary(values: list[float | None]) -> dict[str, float | int | None]:
    got = [v for v in values if v is not None]
    return {
        "loops": len(values),
        "warned": len(got),
        "median_ms": statistics.median(got) if got else None,
        "p90_ms": percentile(got, 0.9),
        "max_ms": max(got) if got else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--loops", type=int, default=10, help="loops per client per round")
    args = parser.parse_args()
    if not (PACKAGE / "dist" / "index.js").exists():
        raise SystemExit("build the TypeScript package first: make typescript-build")
    clients = {
        "python": lambda s, loops: asyncio.run(python_round(s, loops)),
        "typescript (fetch wait 100 ms)": lambda s, loops: typescript_round(s, loops, 100),
        "typescript (kafkajs default 5000 ms)": lambda s, loops: typescript_round(s, loops, 5000),
    }
    found: dict[str, list[float | None]] = {name: [] for name in clients}
    with patterns_worker(f"ts-bench-{uuid.uuid4().hex[:6]}") as settings:
        # not timed: until the worker answers (its first group join and recovery)
        warm = python_round(settings, [f"warm-{uuid.uuid4().hex[:6]}"])
        if asyncio.run(warm) == [None]:
            raise SystemExit("the worker did not warn within 30 s")
        for round_ in range(args.rounds):
            for name, run in clients.items():  # alternated: the machine is shared
                loops = [f"bench-{round_}-{n}-{uuid.uuid4().hex[:6]}" for n in range(args.loops)]
                found[name].extend(run(settings, loops))
                print(f"round {round_ + 1}: {name} done", flush=True)
    rows = {name: summary(values) for name, values in found.items()}
    base = rows["python"]["median_ms"]
    header = f"{'warned':>8} {'median ms':>10} {'p90 ms':>8} {'max ms':>8} {'× python':>9}"
    print(f"\n{'client':40} {header}")
    for name, row in rows.items():
        ratio = row["median_ms"] / base if base and row["median_ms"] else None
        print(
            f"{name:40} {row['warned']:>4}/{row['loops']:<3} {row['median_ms'] or 0:>10.0f} "
            f"{row['p90_ms'] or 0:>8.0f} {row['max_ms'] or 0:>8.0f} {ratio or 0:>9.2f}"
        )
    write_results("typescript_client", {"rounds": args.rounds, "calls": CALLS, "clients": rows})


if __name__ == "__main__":
    main()
