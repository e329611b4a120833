"""Benchmark: the fleet's tool-outage finding scored on real traffic, offline (issue 44).

An outage declared where there is none tells agents a tool is down and makes the
monitor stop counting their failures (no reflection request, no detector). Each
workload runs through the worker's own processors twice, the monitor alone and the
fleet beside it (``loopwarden.evaluation.fleet_traffic``), and the table says what
the fleet declared and what it changed:

- ``dev set``: the dataset's real runs replayed ``--concurrent`` at a time
  (``workloads.real``, as ``action_monitor.py`` replays them): no outage is owed;
- ``random p=…``: 30 loops at 30 events/s whose calls fail at random, independently,
  with their tools' usual errors: none owed;
- ``injected``: the real runs with a one-minute outage of the busiest tool injected
  (``fleet_outage.inject``: 80 % of its calls fail alike, each retried twice): one
  owed; "after s" is the event time from its start to the fleet warning.

Events are read from their loop's partition (``--partitions``, 8 as the worker's
default): a tool's recent calls are judged per partition, as a worker reads them.
Columns: outages declared (false ones: on a tool or error not injected), loops told,
the monitor's reflection requests and lessons lost beside the monitor alone, lessons
kept and marked ``during_tool_outage``, per-loop warnings by origin. ``--significance``
repeats the table for other values of ``fleet.outage_significance``.

    .venv/bin/python benchmarks/fleet_findings.py
    .venv/bin/python benchmarks/fleet_findings.py --significance 1e-3 1e-4 1e-5
"""

from __future__ import annotations

import argparse
import time
from dataclasses import asdict, dataclass

import click
from bench_measure import write_results
from fleet_outage import ERROR, inject
from workloads import real

from loopwarden.evaluation.fleet_traffic import compare, random_failures, run_roles
from loopwarden.schemas import codec
from loopwarden.schemas.events import ActionEvent, validate_action
from loopwarden.settings import Settings


@dataclass(frozen=True, slots=True)
class Row:
    significance: float
    workload: str
    events: int
    owed: int
    declared: int
    false: int
    after_s: float | None
    loops_told: int
    requests_lost: int
    lessons_lost: int
    lessons_marked: int
    monitor_warnings: int
    fleet_warnings: int


def workloads(args: argparse.Namespace) -> list[tuple[str, list[ActionEvent], str | None, float]]:
    """(name, events, injected tool or None, outage start)."""
    decode = [
        validate_action(codec.loads(item.data))
        for item in real(args.events, args.concurrent, 0, "dev")
    ]
    out: list[tuple[str, list[ActionEvent], str | None, float]] = [("dev set", decode, None, 0.0)]
    for rate in args.rates:
        out.append(
            (
                f"random p={rate:g}",
                random_failures(failure_rate=rate, events=args.random_events),
                None,
                0.0,
            )
        )
    prepared, tool, start, _ = inject(real(args.events, 150, 1, "inj"), 0.3, 0.8, 2, 1)
    injected = [validate_action(codec.loads(item.data)) for item in prepared]
    out.append((f"injected ({tool})", injected, tool, start))
    return out


def score(
    significance: float,
    partitions: int,
    name: str,
    events: list[ActionEvent],
    tool: str | None,
    start: float,
) -> Row:
    settings = Settings(fleet={"outage_significance": significance})
    alone = run_roles(settings, events, fleet=False, partitions=partitions)
    both = run_roles(settings, events, fleet=True, partitions=partitions)
    lost = compare(alone, both)
    marker = ERROR.split(":", 1)[0]
    true = [o for o in both.outages if o[0] == tool and o[1].startswith(marker)]
    after = None
    if true and both.first_outage_at is not None:
        after = round(both.first_outage_at[true[0][0]] - start, 1)
    return Row(
        significance,
        name,
        len(events),
        int(tool is not None),
        len(both.outages),
        len(both.outages) - len(true),
        after,
        sum(n for kind, n in both.warnings.items() if kind == "fleet:tool_outage"),
        lost["requests_lost"],
        lost["lessons_lost"],
        both.lessons_during_outage,
        sum(n for kind, n in both.warnings.items() if kind.startswith("monitor:")),
        sum(n for kind, n in both.warnings.items() if kind.startswith("fleet:")),
    )


def print_table(rows: list[Row]) -> None:
    head = (
        f"{'signif.':>8} {'workload':<28} {'events':>7} {'owed':>5} {'declared':>9} {'false':>6} "
        f"{'after s':>8} {'told':>5} {'req lost':>9} {'lessons lost':>13} {'marked':>7} "
        f"{'monitor w':>10} {'fleet w':>8}"
    )
    print(head)
    for r in rows:
        after = "-" if r.after_s is None else f"{r.after_s:g}"
        print(
            f"{r.significance:>8g} {r.workload:<28} {r.events:>7} {r.owed:>5} {r.declared:>9} "
            f"{r.false:>6} {after:>8} {r.loops_told:>5} {r.requests_lost:>9} "
            f"{r.lessons_lost:>13} {r.lessons_marked:>7} {r.monitor_warnings:>10} "
            f"{r.fleet_warnings:>8}"
        )


def main(args: argparse.Namespace) -> None:
    began = time.perf_counter()
    loads = workloads(args)
    jobs = [(s, args.partitions, *load) for s in args.significance for load in loads]
    rows = []
    with click.progressbar(jobs, label="workloads", file=None) as bar:
        for job in bar:
            rows.append(score(*job))
    print()
    print_table(rows)
    print(f"\n{time.perf_counter() - began:.0f} s")
    write_results("fleet_findings", {"args": vars(args), "rows": [asdict(r) for r in rows]})


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--events", type=int, default=20_000, help="real events per workload")
    parser.add_argument("--concurrent", type=int, default=2000, help="dev-set runs at a time")
    parser.add_argument("--random-events", type=int, default=6000)
    parser.add_argument("--rates", type=float, nargs="+", default=[0.1, 0.3, 0.5, 0.7])
    parser.add_argument(
        "--partitions",
        type=int,
        default=8,
        help="each event read from its loop's partition of this many (0: one stream)",
    )
    parser.add_argument(
        "--significance", type=float, nargs="+", default=[Settings().fleet.outage_significance]
    )
    main(parser.parse_args())
