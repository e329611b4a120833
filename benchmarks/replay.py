"""Benchmark: audit replay against the live worker and ``detect``, on the same events.

Per repetition, on fresh topics of the embedded broker (its fetches slow down as a
topic grows):

1. N events (L loops, an action repeats its predecessor with p=0.6, as in
   ``action_monitor.py``) are published through ``AsyncPublisher`` (batched records);
2. ``worker``: a real ``loopwarden worker`` (analyst off), started and warmed up on
   one event first; events/s = N / (first publish → its group committed the end of
   the actions topic);
3. ``replay``: ``loopwarden replay`` (subprocess, as users run it) over the whole
   topics, compared with what the worker recorded; it must agree (exit 0);
4. ``detect``: ``loopwarden detect`` over the same events as JSON lines.

Prints a table (medians over repetitions) and writes ``benchmarks/results/replay.json``.

    .venv/bin/python benchmarks/replay.py                     # 20,000 events, 3 reps
    .venv/bin/python benchmarks/replay.py --events 50000 --reps 1
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import orjson

from loopwarden.agents.capabilities import CAPABILITIES

sys.path.insert(0, str(Path(__file__).parent))
from workloads import synthetic_pairs

from loopwarden.settings import Settings, settings_env
from loopwarden.streams.client.publisher import AsyncPublisher, make_action_event
from loopwarden.streams.tools.broker import EmbeddedBroker
from loopwarden.streams.tools.replay_reader import wait_until_committed
from loopwarden.streams.tools.topics import ensure_topics

RESULTS = Path(__file__).parent / "results"


async def committed_end(
    settings: Settings, topics: list[str] | None = None, timeout_s: float = 600
) -> float:
    """Wait until the worker committed the end of ``topics`` (default: the actions
    topic); when it did."""
    await wait_until_committed(
        settings.kafka.bootstrap_servers,
        settings.app_id,
        topics or [settings.topics.actions],
        timeout_s,
        poll_s=0.05,
    )
    return time.monotonic()


async def publish(settings: Settings, events: list) -> None:
    async with AsyncPublisher(settings) as publisher:
        for event in events:
            publisher.publish_event(event)
        await publisher.flush()


def one_rep(broker: EmbeddedBroker, n: int, loops: int, seed: int, scratch: Path) -> dict:
    tag = f"bench-replay-{uuid.uuid4().hex[:6]}"
    settings = Settings().namespaced(tag, bootstrap_servers=broker.bootstrap_servers)
    settings = settings.model_copy(
        update={
            "analyst": settings.analyst.model_copy(update={"enabled": False}),
            "data_dir": str(scratch / tag),
            "memory": settings.memory.model_copy(update={"uri": str(scratch / tag / "memory")}),
        }
    )
    asyncio.run(ensure_topics(settings, CAPABILITIES))
    t0 = time.time() - n  # event time: one event per second, in the past
    pairs = synthetic_pairs(n, loops, seed, tag)
    events = [
        make_action_event(loop, action, occurred_at=t0 + i)
        for i, (loop, action) in enumerate(pairs)
    ]
    env = {**os.environ, **settings_env(settings)}
    log = open(scratch / f"{tag}.log", "wb")  # noqa: SIM115
    worker = subprocess.Popen(
        [sys.executable, "-m", "loopwarden", "worker"], env=env, stdout=log, stderr=log
    )
    try:
        warm = [make_action_event(f"{tag}-warm", "search", occurred_at=t0 - 10)]
        asyncio.run(publish(settings, warm))
        asyncio.run(committed_end(settings))  # the worker is up and processing
        start = time.monotonic()
        asyncio.run(publish(settings, events))
        done = asyncio.run(committed_end(settings))
        worker_rate = n / (done - start)
    finally:
        worker.terminate()
        worker.wait(60)
        log.close()
    started = time.monotonic()
    replay = subprocess.run(
        [sys.executable, "-m", "loopwarden", "replay", "--json", "--no-progress"],
        env=env,
        capture_output=True,
        check=False,
    )
    replay_s = time.monotonic() - started
    report = orjson.loads(replay.stdout)
    if replay.returncode != 0:
        raise SystemExit(
            f"replay disagreed (exit {replay.returncode}): {report['differences'][:3]}"
        )
    lines = scratch / f"{tag}.jsonl"
    lines.write_bytes(b"".join(e.model_dump_json().encode() + b"\n" for e in events))
    started = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "loopwarden", "detect", str(lines)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    detect_s = time.monotonic() - started
    replayed = report["totals"]["inputs"]  # events replayed (the report says "inputs")
    return {
        "events": n,
        "replayed_events": replayed,
        "matched_outputs": report["totals"]["matched"],
        "worker_events_per_s": worker_rate,
        "replay_events_per_s": replayed / replay_s,
        "detect_events_per_s": n / detect_s,
        "replay_vs_worker": (replayed / replay_s) / worker_rate,
        "replay_vs_detect": (replayed / replay_s) / (n / detect_s),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--loops", type=int, default=1_000)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    runs = []
    with (
        tempfile.TemporaryDirectory(prefix="lw-bench-replay-") as scratch,
        EmbeddedBroker(log_path=Path(scratch) / "broker.log") as broker,
    ):
        for rep in range(args.reps):
            run = one_rep(broker, args.events, args.loops, seed=rep, scratch=Path(scratch))
            runs.append(run)
            print(
                f"rep {rep + 1}: worker {run['worker_events_per_s']:,.0f}/s, replay "
                f"{run['replay_events_per_s']:,.0f}/s, "
                f"detect {run['detect_events_per_s']:,.0f}/s",
                file=sys.stderr,
            )
    keys = [k for k in runs[0] if k.endswith("_per_s") or k.startswith("replay_vs")]
    median = {k: statistics.median(r[k] for r in runs) for k in keys}
    print(f"\n{args.events:,} events, {args.loops:,} loops, median of {args.reps}")
    print(f"{'measure':<24}{'median':>14}")
    for key, value in median.items():
        shown = f"{value:,.0f}" if key.endswith("_per_s") else f"{value:.2f}×"
        print(f"{key:<24}{shown:>14}")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "replay.json"
    out.write_text(json.dumps({"args": vars(args), "runs": runs, "median": median}, indent=2))
    print(f"\nwritten to {out}")


if __name__ == "__main__":
    main()
