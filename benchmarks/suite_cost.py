"""Where `make test`'s CPU goes: the suite run once, the CPU of every test and module.

The suite is CPU-bound on this machine (about 1,100 s of CPU on 2 cores for the main
run): its wall time cannot fall below CPU / cores, so cutting it means cutting CPU,
and this says where it is. It runs pytest as ``make test`` does (``-n 4 --dist
loadfile``, or the ``pytest`` arguments given after ``--``) with
``benchmarks/suite_cost_plugin.py`` loaded, then prints the modules by CPU (with
their wall time and tests), the costliest tests, and what no test's window held
(session fixtures: the brokers, reaped at the end). CPU counts each process's threads
and the child processes it reaped (workers, CLIs run as subprocesses), not a broker's
until its session ends.

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


def run_suite(pytest_args: list[str], folder: Path) -> tuple[int, float, float]:
    """pytest with the plugin; its exit code, wall seconds and CPU (children reaped)."""
    env = {
        **os.environ,
        "SUITE_COST_DIR": str(folder),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])),
    }
    before = os.times()
    began = time.monotonic()
    command = [sys.executable, "-m", "pytest", "-p", "suite_cost_plugin", *pytest_args]
    code = subprocess.run(command, env=env, check=False).returncode
    after = os.times()
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return code, time.monotonic() - began, cpu


def read_rows(folder: Path) -> tuple[list[dict], list[dict]]:
    """(per-test rows, per-process session rows) the plugin wrote."""
    tests, sessions = [], []
    for path in sorted(folder.glob("*.jsonl")):
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
        f"\npytest exit {code}: {wall:.0f} s wall; its test processes' CPU (their own and "
        f"their reaped children's) {in_sessions:.0f} s = {in_sessions / wall:.2f} cores busy"
    )
    print(
        f"  in the tests' windows {in_tests:.0f} s; outside them (collection, session "
        f"fixtures: the brokers) {in_sessions - in_tests:.0f} s\n"
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
        "cpu_reaped_by_pytest_s": round(cpu, 1),
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
