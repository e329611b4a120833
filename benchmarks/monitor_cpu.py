"""Benchmark: the monitor's CPU per event on real traffic, offline, side by side.

The monitor's RecordProcessor (decode, validate, redact, detect: the code every engine
of ``action_monitor.py`` runs) over ``--events`` events of the ``real`` workload, after
3,000 events to warm it up, one BLAS thread as in the worker. Each variant runs in its
own process, the variants alternated ``--reps`` times (the machine is shared: compare
medians of the same run). Variants: this install with its compiled paths, and with
``LOOPWARDEN_NO_EXTENSIONS=1``; ``--tree NAME=PATH`` adds another checkout (a folder
laid out as an installed ``loopwarden`` package, put first on ``PYTHONPATH``), e.g. the
commit work started from. ``--profile NAME`` adds the compiled paths with another
detection profile (the gate's cost: ``--profile loops --profile gated``).
``--with-fleet``: the fleet role's processor reads each record after the monitor, as in
a worker running both (they share its decoding).
Prints a table and writes JSON to ``benchmarks/results/``.

    .venv/bin/python benchmarks/monitor_cpu.py --reps 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from bench_measure import write_results


def run_side(events: int, with_fleet: bool) -> None:
    """One measurement (a subprocess): µs of CPU an event and the warnings, as JSON."""
    from workloads import real

    from loopwarden.agents.fleet.declaration import FAMILY_STATES
    from loopwarden.agents.fleet.records import FleetProcessor
    from loopwarden.agents.monitor.declaration import LOOP_STATES
    from loopwarden.agents.monitor.records import RecordProcessor
    from loopwarden.schemas.dead_letter import SourcePosition
    from loopwarden.schemas.redaction import default_redactor
    from loopwarden.settings import Settings
    from loopwarden.streams.runtime.blas_threads import limit_blas_threads
    from loopwarden.streams.runtime.state.offline import OfflineStates

    limit_blas_threads()
    default_redactor().use_prefilter(background=False)
    stream = real(events, 2000, seed=1, tag="cpu")
    settings = Settings()
    for warm in (True, False):
        processor = RecordProcessor.for_settings(settings)
        fleet = FleetProcessor.for_settings(settings) if with_fleet else None
        states = OfflineStates.for_settings(LOOP_STATES, settings)
        families = OfflineStates.for_settings(FAMILY_STATES, settings)
        warnings = 0
        started = time.process_time()
        for offset, item in enumerate(stream[:3000] if warm else stream):
            source = SourcePosition("cpu", 0, offset)
            outcome = states.apply(processor, item.data, item.loop_id.encode(), source)
            warnings += len(outcome.warnings)
            if fleet is not None:  # the second reader of the same record, as in the worker
                read = families.apply(fleet, item.data, item.loop_id.encode(), source)
                warnings += len(read.warnings) + len(read.fleet_warnings)
    seconds = time.process_time() - started
    print(json.dumps({"us_per_event": 1e6 * seconds / events, "warnings": warnings}))


def measure(env: dict[str, str], events: int, with_fleet: bool) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, __file__, "--side", str(events), *(["fleet"] if with_fleet else [])],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise SystemExit(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--tree", action="append", default=[], help="NAME=PATH")
    parser.add_argument(
        "--with-fleet",
        action="store_true",
        help="the fleet reads each record after the monitor, as in a worker with both roles",
    )
    parser.add_argument(
        "--profile",
        action="append",
        default=[],
        help="also run the compiled paths with this detection profile (e.g. loops, gated)",
    )
    args = parser.parse_args()
    variants: dict[str, dict[str, str]] = {
        "compiled": {"LOOPWARDEN_NO_EXTENSIONS": "0"},
        "pure-python": {"LOOPWARDEN_NO_EXTENSIONS": "1"},
    }
    for profile in args.profile:
        variants[f"compiled, {profile}"] = {
            "LOOPWARDEN_NO_EXTENSIONS": "0",
            "LOOPWARDEN_DETECTION__PROFILE": profile,
        }
    for tree in args.tree:
        name, _, path = tree.partition("=")
        variants[name] = {"PYTHONPATH": path, "LOOPWARDEN_NO_EXTENSIONS": "0"}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in variants}
    for rep in range(args.reps):
        for name, env in variants.items():
            runs[name].append(measure(env, args.events, args.with_fleet))
            print(f"  rep {rep} {name}: {runs[name][-1]['us_per_event']:.1f} µs/event", flush=True)
    print(f"\n{'variant':<14}{'median µs/event':>17}{'runs':>28}{'warnings':>10}")
    report = {
        "events": args.events,
        "reps": args.reps,
        "with_fleet": args.with_fleet,
        "variants": {},
    }
    for name, measured in runs.items():
        each = [m["us_per_event"] for m in measured]
        median = statistics.median(each)
        warnings = sorted({int(m["warnings"]) for m in measured})
        shown = " ".join(f"{x:.0f}" for x in each)
        print(f"{name:<14}{median:>17.1f}{shown:>28}{warnings!s:>10}")
        report["variants"][name] = {"median": median, "runs": each, "warnings": warnings}
    write_results("monitor_cpu", report)
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--side":
        run_side(int(sys.argv[2]), sys.argv[3:] == ["fleet"])
    else:
        sys.exit(main())
