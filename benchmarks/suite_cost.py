"""Where `make test`'s CPU goes: the suite run once, the CPU of every test and module.

On this 2-core machine the suite's wall time cannot fall below its CPU / 2 (pytest's
main run took about 840 s of CPU at 93225aa), so cutting it means cutting CPU or
filling the cores while tests wait; this says where both go. It runs pytest as
``make test`` does (``-n 4 --dist loadfile``, or the ``pytest`` arguments given after
``--``) with ``benchmarks/suite_cost_plugin.py`` loaded and prints the modules by CPU
(with their wall time and tests) and the costliest tests.

The total is the machine's busy CPU over the run (``/proc/stat``: run nothing else
meanwhile). Per test it is the test process's own CPU (all its threads) and that of
the children it reaped meanwhile: a subprocess it ran, a cold worker it stopped — not
a warm-forked worker (``tests/support/warm_processes.py``: its fork server reaps it)
nor a broker (reaped at the session's end, outside every test's window).

    .venv/bin/python benchmarks/suite_cost.py [--top 25] [--out FILE] [-- PYTEST ARGS]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
DEFAULT_ARGS = ["-n", "4", "--dist", "loadfile", "--no-loadscope-reorder", "-q"]


def machine_cpu_s() -> float:
    """CPU seconds every core of the machine spent busy so far (``/proc/stat``): the
    one count that holds processes nobody reaps (a fork server's children orphaned at
    the end), on a machine that runs nothing else meanwhile."""
    fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def run_suite(pytest_args: list[str], folder: Path) -> tuple[int, float, float]:
    """pytest with the plugin; its exit code, wall seconds and the machine's busy CPU."""
    env = {
        **os.environ,
        "SUITE_COST_DIR": str(folder),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])),
    }
    busy = machine_cpu_s()
    began = time.monotonic()
    command = [sys.executable, "-m", "pytest", "-p", "suite_cost_plugin", *pytest_args]
    code = subprocess.run(command, env=env, check=False).returncode
    return code, time.monotonic() - began, machine_cpu_s() - busy


def read_rows(folder: Path) -> tuple[list[dict], list[dict]]:
    """(per-test rows, per-process session rows) the plugin wrote."""
    tests, sessions = [], []
    workers = sorted(folder.glob("gw*.jsonl"))  # under xdist the controller's own row
    for path in workers or sorted(folder.glob("*.jsonl")):  # counts its workers again
        for line in path.read_bytes().splitlines():
            row = orjson.loads(line)
            (sessions if row.get("session") else tests).append(row)
    return tests, sessions


def by_module(tests: list[dict]) -> list[dict]:
    """Modules by CPU: cpu, wall, tests."""
    modules: dict[str, dict] = defaultdict(lambda: {"cpu_s": 0.0, "wall_s": 0.0, "tests": 0})
    for row in tests:
        module = modules[row["test"].split("::")[0]]
        module["cpu_s"] += row["cpu_s"]
        module["wall_s"] += row["wall_s"]
        module["tests"] += 1
    rows = [{"module": name, **values} for name, values in modules.items()]
    return sorted(rows, key=lambda r: -r["cpu_s"])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    own, pytest_args = (
        (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    )
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=25, help="modules and tests to show")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "suite_cost.json")
    args = parser.parse_args(own)
    with tempfile.TemporaryDirectory(prefix="lw-suite-cost-") as folder:
        code, wall, cpu = run_suite(pytest_args or DEFAULT_ARGS, Path(folder))
        tests, sessions = read_rows(Path(folder))
    in_tests = sum(r["cpu_s"] for r in tests)
    in_sessions = sum(r["cpu_s"] for r in sessions)
    modules = by_module(tests)
    print(
        f"\npytest exit {code}: {wall:.0f} s wall, the machine's cores busy {cpu:.0f} s "
        f"= {cpu / wall:.2f} cores on average"
    )
    print(
        f"  in the tests' windows {in_tests:.0f} s; in the test processes outside them "
        f"(collection, session fixtures: the brokers) {in_sessions - in_tests:.0f} s\n"
    )
    print(f"{'CPU s':>7} {'wall s':>7} {'tests':>5}  module")
    for row in modules[: args.top]:
        print(f"{row['cpu_s']:7.1f} {row['wall_s']:7.1f} {row['tests']:5d}  {row['module']}")
    print(f"\n{'CPU s':>7} {'wall s':>7}  test")
    costliest = sorted(tests, key=lambda r: -r["cpu_s"])[: args.top]
    for row in costliest:
        print(f"{row['cpu_s']:7.1f} {row['wall_s']:7.1f}  {row['test']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    summary = {
        "exit": code,
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "cpu_in_tests_s": round(in_tests, 1),
        "cpu_in_sessions_s": round(in_sessions, 1),
        "modules": [
            {**r, "cpu_s": round(r["cpu_s"], 2), "wall_s": round(r["wall_s"], 2)} for r in modules
        ],
        "tests": [
            {**r, "cpu_s": round(r["cpu_s"], 3), "wall_s": round(r["wall_s"], 3)} for r in tests
        ],
    }
    args.out.write_text(json.dumps(summary, indent=1) + "\n")
    print(f"\nwritten: {args.out}")
    return code


if __name__ == "__main__":
    raise SystemExit(main())
