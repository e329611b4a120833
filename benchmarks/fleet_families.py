"""Benchmark: the fleet role on real multi-agent runs, against their annotated loops.

The dataset's Who&When runs are multi-agent chats (Magentic-One's orchestrator and
its web surfer, coder and file surfer; AutoGen group chats of experts). Each run is
published as a family of loops (:mod:`loopwarden.evaluation.families`): the first
speaker's turns are the root loop, each other agent's turns a loop of its own whose
parent is the root. Printed per view, against ``loops.jsonl`` (definitions in
``loopwarden/evaluation/scoring.py``):

- ``fleet``: the fleet warnings (one per finding about the family);
- ``monitor, one loop per run``: the action monitor on the run as one loop (the
  detection benchmark's view);
- ``monitor, one loop per agent``: the monitor on the family's loops;
- ``monitor per agent + fleet``: what an agent of the family is told by either.

Then each looping run with where the fleet warned. JSON goes to
``benchmarks/results/fleet_families.json``.

    .venv/bin/python benchmarks/fleet_families.py
    .venv/bin/python benchmarks/fleet_families.py --set fleet.ping_pong_repeats=4
"""

from __future__ import annotations

import argparse
import json
import time

from detection_quality import RESULTS, dataset_dir, positions, shown_by

from loopwarden.evaluation.dataset import load
from loopwarden.evaluation.families import family_warnings
from loopwarden.evaluation.scoring import score
from loopwarden.settings import Settings
from loopwarden.settings.overrides import with_overrides


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--dir", help="dataset directory (events/, loops.jsonl)")
    parser.add_argument("--source", default="who-and-when", help="the multi-agent runs' source")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    settings = with_overrides(Settings(), args.set)
    runs = [run for run in load(dataset_dir(args.dir)) if run.source == args.source]
    if not runs:
        raise SystemExit(f"no runs of source {args.source!r}")
    started = time.perf_counter()
    _, split_shown, fleet_warnings = family_warnings(settings, runs)
    whole = shown_by(settings, runs, "monitor, one loop/run")
    fleet = {loop: [w["position"] for w in found] for loop, found in fleet_warnings.items()}
    split = positions(split_shown)
    both = {loop: sorted(set(split[loop]) | set(fleet[loop])) for loop in split}
    views = {
        "fleet": score(runs, fleet),
        "monitor, one loop per run": score(runs, positions(whole)),
        "monitor, one loop per agent": score(runs, split),
        "monitor per agent + fleet": score(runs, both),
    }
    looping = sum(run.looping for run in runs)
    took = time.perf_counter() - started
    print(f"{len(runs)} {args.source} runs ({looping} looping), {took:.1f} s")
    print(
        f"{'view':<30} {'recall':>7} {'timely':>7} {'false al.':>9} {'precision':>9} "
        f"{'per 100':>8} {'delay':>6} {'warnings':>8}"
    )
    for name, figures in views.items():
        precision = "-" if figures.precision is None else f"{figures.precision:.0%}"
        delay = "-" if figures.median_delay is None else f"{figures.median_delay:+.0f}"
        print(
            f"{name:<30} {figures.recall:>7.0%} {figures.timely:>7.0%} "
            f"{figures.false_alarms:>9.0%} {precision:>9} {figures.per_100:>8.2f} {delay:>6} "
            f"{figures.warnings:>8}"
        )
    print("\nwhere the fleet warned (position: kind step), against each run's loops")
    detail = {}
    for run in runs:
        found = fleet_warnings[run.loop_id]
        if not (run.looping or found):
            continue
        segments = " ".join(f"[{s.start}..{s.evident}..{s.end} {s.kind}]" for s in run.segments)
        said = ", ".join(f"{w['position']}: {w['kind']} {w['step']}" for w in found) or "-"
        print(f"  {run.loop_id.rsplit('__', 2)[-2:]!s:<28} {segments or 'loop-free':<48} {said}")
        detail[run.loop_id] = {
            "segments": [[s.start, s.evident, s.end, s.kind] for s in run.segments],
            "fleet_warnings": [[w["position"], w["kind"], w["step"]] for w in found],
        }
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "fleet_families.json"
    out.write_text(
        json.dumps(
            {
                "runs": len(runs),
                "looping_runs": looping,
                "settings": args.set,
                "views": {name: figures.as_dict() for name, figures in views.items()},
                "runs_detail": detail,
            },
            indent=2,
        )
    )
    print(f"\nwritten {out}")


if __name__ == "__main__":
    main()
