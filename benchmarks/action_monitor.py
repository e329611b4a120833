"""Benchmark: action monitor throughput and publish→warning latency, with baselines.

Runs on the embedded broker, every engine against the same events in the same run:

- ``loopwarden``: a real ``loopwarden worker`` process (Faust, table + changelog), the
  reflection analyst switched off (it is measured by ``loopwarden-all``);
- ``loopwarden-all``: the same worker with the analyst analysing every reflection request;
- ``loopwarden-observed``: ``loopwarden`` with all its telemetry on: the web port (the
  Prometheus reader aggregating every metric), and a span per event exported over
  OTLP/HTTP to a receiver in this process that discards them (the cost of tracing);
- ``raw-processor``: plain aiokafka consume/produce around loopwarden's own
  RecordProcessor (state in a dict, no changelog): the cost of the logic without Faust;
- ``raw-trivial``: plain aiokafka with orjson and a dict streak check only (the
  floor the broker and client allow on this machine);
- ``quix``: the same RecordProcessor on Quix Streams (librdkafka, RocksDB state with
  its changelog), single-event records only (``quix_monitor.py``).

Shapes: ``single`` (one event per record, published by librdkafka as a Java or Go
service would) and ``batched`` (``AsyncPublisher``'s records of up to 50 events).
Every repetition runs on fresh topics with a freshly started engine: the embedded
broker's fetch latency grows with a topic's length; "ready s" is the time from the
engine's start to its first warning.

Workloads (``workloads.py``), every engine on each in the same run:

- ``synthetic``: L loops, an action repeats its predecessor with p=0.6 (43 % of the
  events warn), the ``seed`` profile;
- ``real``: the real agent runs of ``../shared/datasets/trajectories/`` replayed under
  fresh loop ids, ``--concurrent`` at a time, merged by their own event times, the
  default profile (about one warning in a hundred events).

Modes:

- ``sat``: N events published as a backlog; events/s = N / (last expected warning
  received − first publish).
- ``paced`` (``p200``, ``p1000`` … one per ``--rate``): events published at R
  events/s; latency = warning received − the triggering event's send time, p50/p99.

``--alternate`` runs repetition by repetition, every engine in turn, so that each
sees the same moments of a shared machine; ``--previous PATH`` adds the engine
``loopwarden-previous``, the worker of another checkout (a folder laid out as an
installed ``loopwarden`` package, e.g. the commit work started from): an A/B in one run.

Every run checks that the number of warnings equals what the engine's logic produces
offline for the same events (``raw-trivial``: its own streak rule). Prints a table and
writes JSON to ``benchmarks/results/``.

    .venv/bin/python benchmarks/action_monitor.py                  # defaults
    .venv/bin/python benchmarks/action_monitor.py --events 100000 --reps 3 --rate 500
    .venv/bin/python benchmarks/action_monitor.py --brokers embedded kafka --rate 200 1000 \
        --workloads real --shapes single --alternate --previous /tmp/before-pkg
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench_engines import PREVIOUS_TREE, bench_settings, serve_raw, start_engine
from bench_measure import (
    LOGS,
    OTHER_ORIGINS,
    Collector,
    bench_broker,
    percentile,
    process_cpu_s,
    publish,
    write_results,
)
from quix_monitor import create_quix_topics, serve_quix
from workloads import Prepared, expected_warnings, real, synthetic, warmup

from loopwarden.agents.capabilities import CAPABILITIES
from loopwarden.settings import Settings
from loopwarden.streams.tools.broker import EmbeddedBroker
from loopwarden.streams.tools.topics import ensure_topics

# -- workload ----------------------------------------------------------------------------------


def events_of(
    workload: str, n: int, args: argparse.Namespace, seed: int, tag: str
) -> list[Prepared]:
    """The events of one repetition (see ``workloads.py``)."""
    if workload == "real":
        return real(n, args.concurrent, seed, tag)
    return synthetic(n, args.loops, seed, tag)


@dataclass
class Run:
    engine: str
    workload: str
    shape: str
    mode: str
    events: int
    loops: int
    expected_warnings: int
    received_warnings: int
    seconds: float
    events_per_s: float
    p50_ms: float | None
    p99_ms: float | None
    ok: bool
    startup_s: float = 0.0
    worker_cpu_s: float | None = None
    extra: dict[str, float] = field(default_factory=dict)
    warnings_by_origin: dict[str, int] = field(default_factory=dict)
    """Every warning received, by the role that produced it: the monitor's are compared
    with what it owes; the fleet's and the guardrails' are on the same topic."""


class Plans:
    """The events of every repetition and what each kind of engine owes for them,
    built once and shared by the engines (the same events for every engine)."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self._events: dict[tuple[str, int, int], list[Prepared]] = {}
        self._expected: dict[tuple[str, int, int, bool], int] = {}

    def events(self, workload: str, rep: int, n: int) -> list[Prepared]:
        key = (workload, rep, n)
        if key not in self._events:
            self._events[key] = events_of(workload, n, self.args, rep, f"{workload[0]}{rep}")
        return self._events[key]

    def expected(self, engine: str, settings: Settings, workload: str, rep: int, n: int) -> int:
        key = (workload, rep, n, engine == "raw-trivial")
        if key not in self._expected:
            events = self.events(workload, rep, n)
            self._expected[key] = expected_warnings(engine, settings, events)
        return self._expected[key]


async def run_engine(
    engine: str,
    broker: EmbeddedBroker,
    args: argparse.Namespace,
    logs: Path,
    plans: Plans,
    reps: range | None = None,
) -> list[Run]:
    """The repetitions ``reps`` (every one by default) on fresh topics with a freshly
    started engine (the embedded broker's fetch latency grows with a topic's length);
    the saturated ones first, then the paced ones at each ``--rate``."""
    runs: list[Run] = []
    modes = [("sat", args.events, None)] * args.reps + [
        (f"p{rate:g}", args.paced_events, rate) for rate in args.rate for _ in range(args.reps)
    ]
    for workload in args.workloads:
        for shape in args.shapes:
            if engine == "quix" and shape != "single":
                continue  # a Quix state is the state of a record's key: one loop per record
            for rep, (mode, n, rate) in enumerate(modes):
                if reps is not None and rep not in reps:
                    continue
                runs.append(
                    await run_rep(
                        engine, broker, args, logs, plans, (workload, shape, mode), rep, n, rate
                    )
                )
                r = runs[-1]
                print(
                    f"  {engine} {workload} {shape} {mode} rep {rep}: ready in "
                    f"{r.startup_s:.1f} s, {r.events_per_s:,.0f} ev/s, p50 {r.p50_ms or 0:.1f} "
                    f"ms, p99 {r.p99_ms or 0:.1f} ms, {r.received_warnings}/"
                    f"{r.expected_warnings} warnings",
                    flush=True,
                )
    return runs


async def run_rep(
    engine: str,
    broker: EmbeddedBroker,
    args: argparse.Namespace,
    logs: Path,
    plans: Plans,
    kind: tuple[str, str, str],
    rep: int,
    n: int,
    rate: float | None,
) -> Run:
    workload, shape, mode = kind
    settings = bench_settings(f"bench-{engine}", broker, args.partitions, logs, workload)
    events = plans.events(workload, rep, n)
    expected = plans.expected(engine, settings, workload, rep, n)
    if engine == "quix":
        await create_quix_topics(settings)
    await ensure_topics(settings, CAPABILITIES)
    collector = Collector(settings)
    await collector.start()
    started = time.monotonic()
    process = start_engine(engine, settings, logs / f"{engine}.log")
    try:
        collector.reset("warmup")
        await publish(settings, warmup("warmup"), None, shape)
        if not await collector.wait_for(1, 120):
            raise RuntimeError(f"{engine}: no warm-up warning; see {logs}")
        startup_s = time.monotonic() - started
        sent = collector.reset(f"{workload[0]}{rep}-")
        cpu_before = process_cpu_s(process.pid)
        first = await publish(settings, events, rate, shape, sent)
        ok = await collector.wait_for(expected, args.timeout)
        cpu_after = process_cpu_s(process.pid)
        seconds = (collector.last_at or time.time()) - first
        lat = collector.latencies_ms
        return Run(
            engine=engine,
            workload=workload,
            shape=shape,
            mode=mode,
            events=n,
            loops=args.concurrent if workload == "real" else args.loops,
            expected_warnings=expected,
            received_warnings=collector.count,
            seconds=round(seconds, 3),
            events_per_s=round(n / seconds, 1),
            p50_ms=percentile(lat, 0.5),
            p99_ms=percentile(lat, 0.99),
            ok=ok and collector.count == expected,
            startup_s=round(startup_s, 2),
            worker_cpu_s=(cpu_after - cpu_before) if cpu_after and cpu_before else None,
            warnings_by_origin=dict(collector.by_origin),
        )
    finally:
        await collector.stop()
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()


def summarize(runs: list[Run]) -> list[dict[str, object]]:
    rows = []
    for workload in dict.fromkeys(r.workload for r in runs):
        for engine in dict.fromkeys(r.engine for r in runs):
            for shape in ("single", "batched"):
                for mode in dict.fromkeys(r.mode for r in runs):
                    group = [
                        r
                        for r in runs
                        if (r.workload, r.engine, r.mode, r.shape)
                        == (workload, engine, mode, shape)
                    ]
                    if group:
                        rows.append(_row(group))
    baseline = {
        (r["workload"], r["shape"], r["mode"]): r for r in rows if r["engine"] == "raw-trivial"
    }
    for row in rows:
        base = baseline.get((row["workload"], row["shape"], row["mode"]))
        row["throughput_vs_raw_trivial"] = (
            round(row["events_per_s"] / base["events_per_s"], 3) if base else None
        )
    return rows


def _row(group: list[Run]) -> dict[str, object]:
    cpu = [r.worker_cpu_s / r.events * 1e6 for r in group if r.worker_cpu_s]
    p50 = [r.p50_ms for r in group if r.p50_ms is not None]
    p99 = [r.p99_ms for r in group if r.p99_ms is not None]
    first = group[0]
    return {
        "workload": first.workload,
        "engine": first.engine,
        "shape": first.shape,
        "mode": first.mode,
        "events": first.events,
        "warnings_per_100": round(100 * first.expected_warnings / first.events, 2),
        "events_per_s": statistics.median(r.events_per_s for r in group),
        "runs_events_per_s": [r.events_per_s for r in group],
        "p50_ms": statistics.median(p50) if p50 else None,
        "p99_ms": statistics.median(p99) if p99 else None,
        "worker_cpu_us_per_event": round(statistics.median(cpu), 1) if cpu else None,
        "startup_s": statistics.median(r.startup_s for r in group),
        "all_ok": all(r.ok for r in group),
        "other_warnings": statistics.median(_others(r) for r in group),
        "warnings_by_origin": [r.warnings_by_origin for r in group],
    }


def _others(run: Run) -> int:
    """Warnings of a run that were not the monitor's (the fleet's, the guardrails')."""
    return sum(n for origin, n in run.warnings_by_origin.items() if origin in OTHER_ORIGINS)


def print_table(rows: list[dict[str, object]]) -> None:
    header = (
        f"{'workload':<10}{'engine':<20} {'shape':<7} {'mode':<6} {'events':>7} {'warn/100':>8} "
        f"{'events/s':>10} {'vs raw':>7} {'p50 ms':>8} {'p99 ms':>8} {'µs CPU/ev':>9} "
        f"{'ready s':>7} {'other w':>7} ok"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        ratio = r["throughput_vs_raw_trivial"]
        cpu = r["worker_cpu_us_per_event"]
        print(
            f"{r['workload']:<10}{r['engine']:<20} {r['shape']:<7} {r['mode']:<6} "
            f"{r['events']:>7} {r['warnings_per_100']:>8} "
            f"{r['events_per_s']:>10,.0f} {ratio if ratio is not None else '-':>7} "
            f"{r['p50_ms'] or 0:>8.1f} {r['p99_ms'] or 0:>8.1f} "
            f"{cpu if cpu is not None else '-':>9} {r['startup_s']:>7.1f} "
            f"{r['other_warnings']:>7g} {'yes' if r['all_ok'] else 'NO'}"
        )


async def main(args: argparse.Namespace) -> int:
    every_row: list[dict[str, object]] = []
    every_run: list[dict[str, object]] = []
    plans = Plans(args)  # the same events on every broker
    for kind in args.brokers:
        runs: list[Run] = []
        with bench_broker(kind) as broker:
            if args.alternate:  # rep by rep, every engine in turn: the same noise for each
                for rep in range(args.reps * (1 + len(args.rate))):
                    for engine in args.engines:
                        runs += await run_engine(
                            engine, broker, args, LOGS, plans, range(rep, rep + 1)
                        )
            else:
                for engine in args.engines:
                    runs.extend(await run_engine(engine, broker, args, LOGS, plans))
        rows = [{"broker": kind, **row} for row in summarize(runs)]
        print(f"\n{kind} broker:")
        print_table(rows)
        every_row += rows
        every_run += [{"broker": kind, **asdict(r)} for r in runs]
    write_results("action_monitor", {"args": vars(args), "summary": every_row, "runs": every_run})
    return 0 if all(r["all_ok"] for r in every_row) else 1


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=100_000, help="events per sat rep")
    parser.add_argument("--paced-events", type=int, default=5_000, help="events per paced rep")
    parser.add_argument(
        "--rate", type=float, nargs="+", default=[500.0], help="paced events/s (each in turn)"
    )
    parser.add_argument(
        "--alternate",
        action="store_true",
        help="run repetition by repetition, every engine in turn (A/B on a noisy machine)",
    )
    parser.add_argument(
        "--previous",
        metavar="PATH",
        help="add the engine loopwarden-previous: the worker of another checkout, laid out "
        "as an installed loopwarden package at PATH (e.g. the commit work started from)",
    )
    parser.add_argument("--loops", type=int, default=1000, help="loops of the synthetic mix")
    parser.add_argument("--concurrent", type=int, default=2000, help="real runs replayed at a time")
    parser.add_argument(
        "--workloads",
        nargs="+",
        default=["synthetic", "real"],
        choices=["synthetic", "real"],
        help="synthetic: the p=0.6 repeat mix (seed profile); real: the trajectories' runs",
    )
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument(
        "--shapes",
        nargs="+",
        default=["single", "batched"],
        choices=["single", "batched"],
        help="single: one event per record (librdkafka); batched: AsyncPublisher's records",
    )
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument(
        "--engines",
        nargs="+",
        default=["raw-trivial", "raw-processor", "quix", "loopwarden"],
        choices=[
            "raw-trivial",
            "raw-processor",
            "quix",
            "loopwarden",
            "loopwarden-all",
            "loopwarden-observed",
            "loopwarden-previous",
        ],
    )
    parser.add_argument(
        "--brokers",
        nargs="+",
        default=["embedded"],
        choices=["embedded", "kafka"],
        help="run everything on each: the embedded Tansu, one Apache Kafka node (Java)",
    )
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    return parser.parse_args()


def _exit_on_sigterm(signum: int, frame: object) -> None:
    # `timeout` sends SIGTERM: unwind so the broker and workers we started are stopped.
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    arguments = parse_args()
    if arguments.previous:
        os.environ[PREVIOUS_TREE] = arguments.previous
        if "loopwarden-previous" not in arguments.engines:
            arguments.engines.append("loopwarden-previous")
    if arguments.serve == "quix":
        serve_quix(Settings())
    elif arguments.serve:
        asyncio.run(serve_raw(arguments.serve))
    else:
        sys.exit(asyncio.run(main(arguments)))
