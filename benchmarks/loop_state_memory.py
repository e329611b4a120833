"""Benchmark: resident memory of a worker per distinct loop, and its reuse after expiry.

On fresh topics of the embedded broker, one ``loopwarden worker`` (analyst off) gets:

1. wave 1: N distinct loops, 3 events each (published in chunks, batched records);
2. wave 2: N other loops, their events 10,000 s of event time later, so the wave-1
   loops are idle past ``limits.idle_loop_ttl_s`` (60 s here) and are reclaimed by
   the in-stream sweep while wave 2 is processed.

The worker's resident set (``VmRSS``) is read after it is ready and after each wave
has been committed; the goal is at most 1 GB of growth for a million loops, and no
further growth in wave 2 (memory reused). Events/s of each wave are printed too.
JSON goes to ``benchmarks/results/loop_state_memory.json``.

    .venv/bin/python benchmarks/loop_state_memory.py                 # 200,000 loops
    .venv/bin/python benchmarks/loop_state_memory.py --loops 1000000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from loopwarden.agents.capabilities import CAPABILITIES

sys.path.insert(0, str(Path(__file__).parent))
from replay import committed_end

from loopwarden.settings import LimitSettings, Settings, settings_env
from loopwarden.streams.client.publisher import AsyncPublisher, make_action_event
from loopwarden.streams.tools.broker import EmbeddedBroker
from loopwarden.streams.tools.topics import ensure_topics

RESULTS = Path(__file__).parent / "results"
CHUNK = 20_000


def rss_mb(pid: int) -> float:
    """Resident set of ``pid`` in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


async def wave(settings: Settings, tag: str, loops: int, t0: float) -> float:
    """Publish ``loops`` loops × 3 events (event time from ``t0``); events/s to commit."""
    start = time.monotonic()
    async with AsyncPublisher(settings) as publisher:
        for first in range(0, loops, CHUNK):
            for step in range(3):
                for n in range(first, min(first + CHUNK, loops)):
                    event = make_action_event(
                        f"{tag}-{n}",
                        ("search", "read", "search")[step],
                        params={"q": f"query {n}"},
                        occurred_at=t0 + step,
                    )
                    publisher.publish_event(event)
            await publisher.flush()
    await committed_end(settings, timeout_s=3600)
    return 3 * loops / (time.monotonic() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--loops", type=int, default=200_000)
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="lw-bench-mem-") as scratch,
        EmbeddedBroker(log_path=Path(scratch) / "broker.log") as broker,
    ):
        tag = f"mem-{uuid.uuid4().hex[:6]}"
        settings = Settings().namespaced(tag, bootstrap_servers=broker.bootstrap_servers)
        settings = settings.model_copy(
            update={
                "analyst": settings.analyst.model_copy(update={"enabled": False}),
                "limits": LimitSettings(idle_loop_ttl_s=60, expiry_sweep_interval_s=5),
                "data_dir": scratch,
                "memory": settings.memory.model_copy(update={"uri": f"{scratch}/memory"}),
            }
        )
        asyncio.run(ensure_topics(settings, CAPABILITIES))
        env = {**os.environ, **settings_env(settings)}
        with open(Path(scratch) / "worker.log", "wb") as log:
            worker = subprocess.Popen(
                [sys.executable, "-m", "loopwarden", "worker"], env=env, stdout=log, stderr=log
            )
            try:
                t0 = time.time() - 100_000
                asyncio.run(wave(settings, f"{tag}-warm", 10, t0))
                ready = rss_mb(worker.pid)
                rate1 = asyncio.run(wave(settings, f"{tag}-a", args.loops, t0 + 10))
                after1 = rss_mb(worker.pid)
                rate2 = asyncio.run(wave(settings, f"{tag}-b", args.loops, t0 + 10_010))
                after2 = rss_mb(worker.pid)
            finally:
                worker.terminate()
                worker.wait(120)
    result = {
        "loops": args.loops,
        "rss_ready_mb": ready,
        "rss_after_wave1_mb": after1,
        "rss_after_wave2_mb": after2,
        "growth_per_loop_bytes": (after1 - ready) * 1024 * 1024 / args.loops,
        "growth_for_1m_loops_mb": (after1 - ready) * 1_000_000 / args.loops,
        "wave2_growth_mb": after2 - after1,
        "wave1_events_per_s": rate1,
        "wave2_events_per_s": rate2,
    }
    print(f"\n{args.loops:,} loops × 3 events per wave, one worker")
    for key, value in result.items():
        print(f"{key:<26}{value:>14,.1f}")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "loop_state_memory.json"
    out.write_text(json.dumps(result, indent=2))
    print(f"\nwritten to {out}")


if __name__ == "__main__":
    main()
