"""How long `loopwarden` commands take to start, against bare Python in the same run.

Each command runs ``--repeat`` times as a fresh process; the table shows the
median wall time, the ratio to ``python -c pass`` (the baseline on this machine,
this run) and the time minus the baseline. ``detect`` runs over the labelled
trajectories in ``--trajectories`` (if given) to show start-up against real work.
Commands that do not touch LanceDB should start in under 0.5 s; `memory stats`
shows what opening LanceDB costs.

    .venv/bin/python benchmarks/cli_startup.py [--repeat 7] [--trajectories FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = [sys.executable, "-m", "loopwarden"]
COMMANDS = {
    "python -c pass (baseline)": [sys.executable, "-c", "pass"],
    "loopwarden --help": [*BIN, "--help"],
    "loopwarden -V": [*BIN, "-V"],
    "loopwarden publish --help": [*BIN, "publish", "--help"],
    "loopwarden tail --help": [*BIN, "tail", "--help"],
    "loopwarden detect --help": [*BIN, "detect", "--help"],
    "loopwarden topics --help": [*BIN, "topics", "--help"],
    "loopwarden detect (3 events)": [*BIN, "detect", "-"],
    "loopwarden memory stats --help": [*BIN, "memory", "stats", "--help"],
    "loopwarden memory stats (opens LanceDB)": [*BIN, "memory", "stats"],
}
SMALL = b'{"loop_id": "l", "action_type": "a"}\n' * 3


def timed(command: list[str], stdin: bytes | None) -> float:
    began = time.perf_counter()
    subprocess.run(command, input=stdin, capture_output=True, check=True)
    return time.perf_counter() - began


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument(
        "--trajectories", type=Path, help="JSON lines (a file or a folder of them) for detect"
    )
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/cli_startup.json"))
    args = parser.parse_args(argv)
    # `memory stats` opens an empty store of its own (hashing embedder: no model load)
    os.environ["LOOPWARDEN_MEMORY__URI"] = tempfile.mkdtemp(prefix="lw-cli-bench-")
    os.environ["LOOPWARDEN_MEMORY__EMBEDDER"] = "hashing"
    commands = dict(COMMANDS)
    if args.trajectories:
        source = args.trajectories
        if source.is_dir():  # e.g. ../shared/datasets/trajectories/events: one file of all
            joined = Path(tempfile.mkdtemp()) / "trajectories.jsonl"
            joined.write_bytes(b"".join(p.read_bytes() for p in sorted(source.rglob("*.jsonl"))))
            source = joined
        lines = sum(1 for _ in source.open("rb"))
        commands[f"loopwarden detect ({lines} events)"] = [*BIN, "detect", str(source)]
    rows = []
    baseline = None
    for name, command in commands.items():
        stdin = SMALL if command[-1] == "-" else None
        runs = [timed(command, stdin) for _ in range(args.repeat)]
        median = statistics.median(runs)
        baseline = baseline if baseline is not None else median
        rows.append(
            {
                "command": name,
                "median_s": round(median, 3),
                "ratio_to_python": round(median / baseline, 1),
                "over_python_s": round(median - baseline, 3),
            }
        )
    width = max(len(r["command"]) for r in rows)
    print(f"{'command':<{width}}  median s  × python  over python s")
    for r in rows:
        print(
            f"{r['command']:<{width}}  {r['median_s']:8.3f}  {r['ratio_to_python']:8.1f}"
            f"  {r['over_python_s']:13.3f}"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"repeat": args.repeat, "rows": rows}, indent=2))
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
