"""What an agent author pays to import the client: time, modules, heavy libraries loaded.

Each statement runs in a fresh interpreter ``--runs`` times (median reported), after
one warm-up run so the file cache is the same for all. Prints a table and writes
``benchmarks/results/import_time.json``.

    .venv/bin/python benchmarks/import_time.py [--runs 7] [--python PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

STATEMENTS = {
    "client": "from loopwarden import AsyncPublisher",
    "client + subscriber": "from loopwarden import AsyncPublisher, WarningSubscriber",
    "sync publisher": "from loopwarden import Publisher",
    "worker runtime": "from loopwarden.worker import build_worker_app",
}
HEAVY = ("faust", "lancedb", "numpy", "pyarrow", "opentelemetry.sdk", "detect_secrets", "aiohttp")
PROBE = """
import sys, time
started = time.perf_counter()
{statement}
elapsed = time.perf_counter() - started
heavy = [m for m in {heavy!r} if m in sys.modules]
print(elapsed, len(sys.modules), ",".join(heavy))
"""


def measure(python: str, statement: str, runs: int) -> dict[str, object]:
    """Median seconds, modules loaded and heavy libraries loaded by ``statement``."""
    code = PROBE.format(statement=statement, heavy=HEAVY)
    samples = []
    for run in range(runs + 1):
        out = subprocess.run(
            [python, "-c", code], capture_output=True, text=True, check=True, cwd="/"
        ).stdout.split()
        if run:  # the first run warms the file cache
            samples.append(float(out[0]))
    return {
        "median_ms": round(statistics.median(samples) * 1000, 1),
        "min_ms": round(min(samples) * 1000, 1),
        "modules": int(out[1]),
        "heavy": out[2].split(",") if len(out) > 2 else [],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results/import_time.json"))
    args = parser.parse_args()
    results = {}
    print(f"{'import':<22} {'median ms':>10} {'min ms':>8} {'modules':>8}  heavy libraries loaded")
    for name, statement in STATEMENTS.items():
        row = results[name] = {"statement": statement, **measure(args.python, statement, args.runs)}
        heavy = ", ".join(row["heavy"]) or "none"
        print(f"{name:<22} {row['median_ms']:>10} {row['min_ms']:>8} {row['modules']:>8}  {heavy}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"runs": args.runs, "results": results}, indent=2))


if __name__ == "__main__":
    main()
