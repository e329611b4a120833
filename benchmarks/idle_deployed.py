"""Benchmark: an idle ``loopwarden dev`` as a user runs it (issue 45, item 3).

``loopwarden dev`` (the embedded broker plus one worker with every default role, the
analyst included, and the web page on a free port) is started in a fresh data
directory; once the worker says it is ready and ``--settle`` seconds have passed,
the worker's and the broker's CPU are read from ``/proc/<pid>/stat`` over
``--windows`` windows of ``--window`` seconds, with no traffic. Goal: the worker
≤ 1 % of a core.

    .venv/bin/python benchmarks/idle_deployed.py              # three 30-s windows

Prints a table and writes JSON to ``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_measure import process_cpu_s, write_results

from loopwarden.streams.tools.broker import free_port

READY = "worker ready"


def children(pid: int) -> list[int]:
    """The child processes of ``pid``."""
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def wait_ready(dev: subprocess.Popen[bytes], log: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while READY not in log.read_text(errors="replace"):
        if dev.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"loopwarden dev did not get ready; see {log}")
        time.sleep(0.5)


def main(args: argparse.Namespace) -> int:
    data = Path(tempfile.mkdtemp(prefix="lw-idle-deployed-"))
    log = data / "dev.log"
    env = {
        **os.environ,
        "LOOPWARDEN_DATA_DIR": str(data),
        "LOOPWARDEN_MEMORY__URI": str(data / "memory"),
    }
    command = [sys.executable, "-m", "loopwarden", "dev", "--web-port", str(free_port())]
    with open(log, "wb") as out:
        dev = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    rows = []
    try:
        wait_ready(dev, log, 180)
        time.sleep(args.settle)  # start-up work (prewarm, first sweeps) ends
        kids = children(dev.pid)
        worker = next(k for k in kids if b"loopwarden" in Path(f"/proc/{k}/cmdline").read_bytes())
        broker = next(k for k in kids if k != worker)
        for window in range(1, args.windows + 1):
            before = process_cpu_s(worker), process_cpu_s(broker)
            started = time.monotonic()
            time.sleep(args.window)
            seconds = time.monotonic() - started
            after = process_cpu_s(worker), process_cpu_s(broker)
            shares = [
                round(100 * (b - a) / seconds, 2) if a is not None and b is not None else None
                for a, b in zip(before, after, strict=True)
            ]
            rows.append(
                {
                    "window": window,
                    "seconds": round(seconds, 1),
                    "worker_core_pct": shares[0],
                    "broker_core_pct": shares[1],
                }
            )
            print(
                f"  window {window}: worker {shares[0]} % of a core, broker {shares[1]} %",
                flush=True,
            )
    finally:
        dev.send_signal(signal.SIGINT)  # as Ctrl-C: dev stops its worker and broker
        dev.wait(60)
    print(f"\n{'window':<8}{'worker % core':>15}{'broker % core':>15}")
    for row in rows:
        print(f"{row['window']:<8}{row['worker_core_pct']:>15}{row['broker_core_pct']:>15}")
    write_results("idle_deployed", rows)
    return 0


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--window", type=float, default=30.0, help="seconds per window")
    parser.add_argument("--windows", type=int, default=3)
    parser.add_argument("--settle", type=float, default=20.0, help="seconds after ready")
    return parser.parse_args()


if __name__ == "__main__":
    sys.exit(main(parse_args()))
