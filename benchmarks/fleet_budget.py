"""Benchmark: a family step budget against per-run step caps, on real multi-agent runs.

A team that caps each agent's run (``max_turns``, a framework's recursion limit)
either cuts off productive runs or protects nothing: every agent of a multi-agent
system, every delegated run, gets a fresh cap. A family budget
(``fleet.budget_steps_stop``) caps the workflow instead. Both are replayed here on
the dataset's Who&When runs as families of loops (the first speaker the root, each
other agent a loop of its own, as in ``fleet_families.py``), the family budget
through the fleet role's own processor, and scored against ``loops.jsonl``:

- ``looping stopped``: looping runs stopped at or after the start of their first
  loop (a stop before it cuts the run off while it is still healthy);
- ``loop steps saved``: the annotated loops' steps that never happen because of the
  stop (a loop's steps after the stop of the loop that makes them);
- ``healthy cut off``: loop-free runs stopped;
- ``work lost``: steps outside any loop that never happen (productive work cut off).

A stop is read before the agent's next step: the step that reaches the budget is the
last. JSON goes to ``benchmarks/results/fleet_budget.json``.

    .venv/bin/python benchmarks/fleet_budget.py
    .venv/bin/python benchmarks/fleet_budget.py --family 40 80 --per-run 20 40
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from dataclasses import asdict, dataclass

from detection_quality import RESULTS, dataset_dir

from loopwarden.agents.fleet.declaration import FAMILY_STATES
from loopwarden.agents.fleet.records import FleetProcessor
from loopwarden.evaluation.dataset import Run, load
from loopwarden.evaluation.families import family_events
from loopwarden.schemas import codec
from loopwarden.schemas.dead_letter import SourcePosition
from loopwarden.settings import Settings
from loopwarden.settings.overrides import with_overrides
from loopwarden.streams.runtime.state.offline import OfflineStates

FAMILY_LEVELS = (20, 30, 40, 60, 80, 100)
PER_RUN_LEVELS = (10, 15, 20, 30, 40, 60)


@dataclass
class Figures:
    """One guard at one level, over every run."""

    guard: str
    level: int
    looping_stopped: int = 0
    looping_cut_early: int = 0
    healthy_cut_off: int = 0
    loop_steps: int = 0
    loop_steps_saved: int = 0
    work_steps: int = 0
    work_lost: int = 0


def loop_positions(run: Run) -> set[int]:
    """The positions inside the run's annotated loops."""
    return {p for s in run.segments for p in range(s.start, s.end + 1)}


def family_stop(settings: Settings, run: Run) -> int | None:
    """Where the fleet role stops the family on its step budget (position), if it does."""
    processor = FleetProcessor.for_settings(settings)
    states = OfflineStates.for_settings(FAMILY_STATES, settings)
    events = family_events(run)
    for position, event in enumerate(events):
        source = SourcePosition("dataset", 0, position)
        out = states.apply(processor, codec.dumps(event), None, source)
        if any(w["kind"] == "family_budget" and w["step"] == "stop" for w in out.fleet_warnings):
            return position
    return None


def prevented_by_family(run: Run, stop: int | None) -> set[int]:
    """Positions that never happen: everything after the family's stop."""
    return set() if stop is None else set(range(stop + 1, len(run.events)))


def prevented_by_per_run_cap(run: Run, cap: int) -> tuple[set[int], int | None]:
    """Positions that never happen when each agent's loop is capped at ``cap`` steps
    (the other agents go on), and the first stop's position."""
    steps: dict[str, int] = defaultdict(int)
    prevented, first = set(), None
    for position, event in enumerate(family_events(run)):
        loop = event["loop_id"]
        steps[loop] += 1
        if steps[loop] > cap:
            prevented.add(position)
        elif steps[loop] == cap and first is None:
            first = position
    return prevented, (first if prevented else None)


def tally(figures: Figures, run: Run, prevented: set[int], stop: int | None) -> None:
    loops = loop_positions(run)
    figures.loop_steps += len(loops)
    figures.work_steps += len(run.events) - len(loops)
    figures.loop_steps_saved += len(prevented & loops)
    figures.work_lost += len(prevented - loops)
    if stop is None:
        return
    if not run.looping:
        figures.healthy_cut_off += 1
    elif stop >= min(s.start for s in run.segments):
        figures.looping_stopped += 1
    else:
        figures.looping_cut_early += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--dir", help="dataset directory (events/, loops.jsonl)")
    parser.add_argument("--source", default="who-and-when", help="the multi-agent runs' source")
    parser.add_argument("--family", type=int, nargs="*", default=FAMILY_LEVELS)
    parser.add_argument("--per-run", type=int, nargs="*", default=PER_RUN_LEVELS)
    args = parser.parse_args()
    runs = [run for run in load(dataset_dir(args.dir)) if run.source == args.source]
    if not runs:
        raise SystemExit(f"no runs of source {args.source!r}")
    started = time.perf_counter()
    rows: list[Figures] = []
    for level in args.family:
        settings = with_overrides(Settings(), [f"fleet.budget_steps_stop={level}"])
        figures = Figures("family budget", level)
        for run in runs:
            stop = family_stop(settings, run)
            tally(figures, run, prevented_by_family(run, stop), stop)
        rows.append(figures)
    for cap in args.per_run:
        figures = Figures("per-run cap", cap)
        for run in runs:
            prevented, stop = prevented_by_per_run_cap(run, cap)
            tally(figures, run, prevented, stop)
        rows.append(figures)
    looping = sum(run.looping for run in runs)
    healthy = len(runs) - looping
    took = time.perf_counter() - started
    print(f"{len(runs)} {args.source} runs ({looping} looping, {healthy} loop-free), {took:.1f} s")
    print(
        f"{'guard':<14} {'level':>5} {'looping stopped':>16} {'cut before loop':>16} "
        f"{'loop steps saved':>17} {'healthy cut off':>16} {'work lost':>10}"
    )
    for f in rows:
        saved = f.loop_steps_saved / f.loop_steps if f.loop_steps else 0.0
        lost = f.work_lost / f.work_steps if f.work_steps else 0.0
        print(
            f"{f.guard:<14} {f.level:>5} {f.looping_stopped:>10} of {looping:<3} "
            f"{f.looping_cut_early:>16} {saved:>17.0%} {f.healthy_cut_off:>10} of {healthy:<3} "
            f"{lost:>10.1%}"
        )
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "fleet_budget.json"
    out.write_text(
        json.dumps(
            {
                "source": args.source,
                "runs": len(runs),
                "looping_runs": looping,
                "rows": [asdict(f) for f in rows],
            },
            indent=2,
        )
    )
    print(f"\nwritten {out}")


if __name__ == "__main__":
    main()
