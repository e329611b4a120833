"""Benchmark: the worker group scaled out and in under traffic (issue 72.1).

One worker (monitor role, the seed profile) on fresh topics; ``--loops`` loops each
repeat one action every ``--pace`` seconds, so the offline answer is known: every loop
is warned at counts 3, 4, ... up to the number of rounds, once each. While the loops
step, ``--joiners`` workers join (they take partitions), then are stopped with SIGTERM
(a graceful scale-in, as a deploy or an autoscaler does); the first worker owns every
partition again and the traffic stops. Per run, against the offline answer:

- ``missing``: warnings owed and never sent;
- ``changed``: warnings sent with a count the offline detection never gives at that
  place — a loop told count 3 again after 41 (its state was lost: ``resets``) or a
  count twice (an at-least-once redelivery with the same content is not counted).

Every run uses fresh topics. JSON goes to ``benchmarks/results/``.

    .venv/bin/python benchmarks/group_changes.py --runs 10
    .venv/bin/python benchmarks/group_changes.py --brokers kafka --runs 5
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench_measure import LOGS, bench_broker, write_results
from group_owners import owned
from test_brokers import kafka_worker_settings

from loopwarden.agents.capabilities import CAPABILITIES
from loopwarden.cli.runtime import start_worker_process, stop_process
from loopwarden.settings import Settings
from loopwarden.streams.client.publisher import AsyncPublisher
from loopwarden.streams.client.subscriber import WarningSubscriber
from loopwarden.streams.tools.topics import ensure_topics


@dataclass(frozen=True, slots=True)
class RunOutcome:
    run: int
    broker: str
    rounds: int
    owed: int
    told: int
    missing: int
    changed: int
    resets: int
    seconds: float


def _text(log: Path) -> str:
    return log.read_text(errors="replace") if log.exists() else ""


async def wait_owners(settings: Settings, logs: list[Path], timeout_s: float = 120) -> None:
    """Until the workers of ``logs`` share every partition of the actions topic."""
    wanted = list(range(settings.topics.partitions))
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        held = [owned(_text(log), settings.topics.actions) for log in logs]
        if all(held) and sorted(p for each in held for p in each) == wanted:
            return
        await asyncio.sleep(0.2)
    raise SystemExit(f"the workers never shared the partitions: see {logs}")


def judged(told: dict[str, list[int]], loops: list[str], rounds: int) -> dict[str, int]:
    """Missing, changed and reset counts of what each loop was told."""
    missing = changed = resets = 0
    for loop_id in loops:
        counts = told.get(loop_id, [])
        owed = set(range(3, rounds + 1))
        missing += len(owed - set(counts))
        seen: set[int] = set()
        for before, after in itertools.pairwise([0, *counts]):
            if after in seen:
                changed += 1  # told a count it was told before, after other counts
            if before and after < before:
                resets += 1
            seen.add(after)
    return {"missing": missing, "changed": changed, "resets": resets}


async def one_run(broker: Any, kind: str, run: int, args: argparse.Namespace) -> RunOutcome:
    tag = f"group-{run}-{uuid.uuid4().hex[:6]}"
    settings = Settings().namespaced(
        tag, bootstrap_servers=broker.bootstrap_servers, partitions=args.partitions
    )
    detection = settings.detection.model_copy(update={"profile": "seed"})
    settings = settings.model_copy(
        update={"roles": frozenset({"monitor"}), "detection": detection, "log_level": "info"}
    )
    if kind == "kafka":
        settings = kafka_worker_settings(settings)
    await ensure_topics(settings, CAPABILITIES)
    loops = [f"{tag}-loop-{n}" for n in range(args.loops)]
    logs = [LOGS / f"{tag}-w{n}.log" for n in range(args.joiners + 1)]
    processes = []

    def start(n: int) -> None:
        worker = settings.model_copy(update={"data_dir": f"{settings.data_dir}/{tag}-{n}"})
        processes.append(start_worker_process(worker, str(logs[n])))

    rounds, stop = 0, asyncio.Event()

    async def traffic() -> None:
        nonlocal rounds
        async with AsyncPublisher(settings, batching=False) as publisher:
            while not stop.is_set():
                for loop_id in loops:
                    await publisher.publish(loop_id, "search")
                rounds += 1
                await asyncio.sleep(args.pace)

    started = time.monotonic()
    told: dict[str, list[int]] = {}
    try:
        async with WarningSubscriber(settings, from_beginning=True, dedupe=True) as warnings:
            start(0)
            publishing = asyncio.create_task(traffic())
            await wait_owners(settings, logs[:1])
            for n in range(1, args.joiners + 1):
                start(n)
            await wait_owners(settings, logs)
            for process in processes[1:]:
                stop_process(process)
            await wait_owners(settings, logs[:1])
            await asyncio.sleep(args.pace * 5)
            stop.set()
            await publishing
            owed = args.loops * (rounds - 2)
            for warning in await warnings.collect(owed, args.timeout):
                told.setdefault(warning.loop_id, []).append(warning.consecutive_count or 0)
            for warning in await warnings.collect(1, 3):
                told.setdefault(warning.loop_id, []).append(warning.consecutive_count or 0)
    finally:
        for process in processes:
            stop_process(process)
    verdict = judged(told, loops, rounds)
    return RunOutcome(
        run,
        kind,
        rounds,
        args.loops * (rounds - 2),
        sum(map(len, told.values())),
        seconds=round(time.monotonic() - started, 1),
        **verdict,
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--brokers", nargs="+", default=["embedded"])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--loops", type=int, default=12)
    parser.add_argument("--joiners", type=int, default=2)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--pace", type=float, default=0.2, help="seconds between rounds")
    parser.add_argument("--timeout", type=float, default=120)
    args = parser.parse_args()
    outcomes: list[RunOutcome] = []
    print(
        f"{'broker':<9}{'run':>4}{'rounds':>8}{'owed':>7}{'told':>7}"
        f"{'missing':>9}{'changed':>9}{'resets':>8}{'s':>7}"
    )
    for kind in args.brokers:
        with bench_broker(kind) as broker:
            for run in range(args.runs):
                o = await one_run(broker, kind, run, args)
                outcomes.append(o)
                print(
                    f"{o.broker:<9}{o.run:>4}{o.rounds:>8}{o.owed:>7}{o.told:>7}"
                    f"{o.missing:>9}{o.changed:>9}{o.resets:>8}{o.seconds:>7}",
                    flush=True,
                )
    bad = sum(1 for o in outcomes if o.missing or o.changed)
    print(f"\n{bad} of {len(outcomes)} run(s) told agents something the offline detection does not")
    write_results("group_changes", {"args": vars(args), "runs": [asdict(o) for o in outcomes]})


if __name__ == "__main__":
    asyncio.run(main())
