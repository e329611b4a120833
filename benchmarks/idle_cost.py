"""Benchmark: what a worker costs when little or nothing happens (issue 34).

Each engine runs alone on the embedded broker, on fresh topics, and is measured in
three windows after it answered a warm-up: **idle** (no traffic), **10 events/s** and
**1,000 events/s** (single-event records from librdkafka, the real runs of
``workloads.py`` with the default profile). For each window: the engine's and the broker's CPU as a
share of one core (``/proc/<pid>/stat``), and for the paced windows the
publish → warning p50/p99.

- ``raw-consumer``: plain aiokafka subscribed to the very input topics the worker
  reads (the capabilities' list), with the worker's fetch wait, doing nothing: the
  floor a consumer on this broker pays;
- ``raw-adaptive``: the same with the worker's fetch wait (it grows to
  ``kafka.idle_fetch_max_wait_ms`` while fetches come back empty): the fair floor;
- ``loopwarden``: a ``loopwarden worker`` with its default roles (analyst off, as in
  ``action_monitor.py``);
- ``subscriber``: an agent process following its loop's warnings with the client's
  ``WarningSubscriber`` (no worker runs: what an agent pays to listen while nothing
  is said).

    .venv/bin/python benchmarks/idle_cost.py                  # 30 s windows
    .venv/bin/python benchmarks/idle_cost.py --window 60 --engines loopwarden

Prints a table and writes JSON to ``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

from bench_engines import bench_settings, start_engine
from bench_measure import (
    LOGS,
    Collector,
    bench_broker,
    percentile,
    process_cpu_s,
    publish,
    write_results,
)
from workloads import real, warmup

from loopwarden.agents.capabilities import CAPABILITIES
from loopwarden.settings import Settings
from loopwarden.streams.tools.broker import EmbeddedBroker
from loopwarden.streams.tools.topics import ensure_topics

RATES = {"idle": 0.0, "10/s": 10.0, "1000/s": 1000.0}


@dataclass
class Window:
    engine: str
    window: str
    seconds: float
    engine_core_pct: float | None
    broker_core_pct: float | None
    warnings: int = 0
    p50_ms: float | None = None
    p99_ms: float | None = None


def input_topics(settings: Settings) -> list[str]:
    """The topics a worker with ``settings`` reads (every capability it runs)."""
    topics = [t for c in CAPABILITIES if c.runs_in(settings) for t in c.inputs(settings.topics)]
    return list(dict.fromkeys(topics))


async def serve_raw_consumer(adaptive: bool = False) -> None:
    """The floor: a consumer of the worker's input topics that does nothing (``adaptive``:
    with the worker's fetch wait that grows while fetches come back empty)."""
    from aiokafka import AIOKafkaConsumer

    settings = Settings()
    kafka = settings.kafka
    consumer = AIOKafkaConsumer(
        *input_topics(settings),
        bootstrap_servers=kafka.bootstrap_servers,
        group_id=settings.app_id,
        fetch_max_wait_ms=kafka.fetch_max_wait_ms,
        session_timeout_ms=int(kafka.session_timeout_s * 1000),
        heartbeat_interval_ms=int(kafka.heartbeat_interval_s * 1000),
    )
    await consumer.start()
    if adaptive:
        from loopwarden.streams.client.fetch_wait import fetch_wait_follows_traffic

        wait = kafka.fetch_max_wait_ms, kafka.idle_fetch_max_wait_ms
        fetch_wait_follows_traffic(consumer._fetcher, *wait)
    try:
        while True:
            await consumer.getmany(timeout_ms=1000)
    finally:
        await consumer.stop()


async def serve_subscriber() -> None:
    """An agent listening for its loop's warnings, and nothing comes."""
    from loopwarden.streams.client.subscriber import WarningSubscriber

    async with WarningSubscriber(Settings(), loop_id="idle-agent") as warnings:
        async for _ in warnings:
            pass


def share(before: float | None, after: float | None, seconds: float) -> float | None:
    if before is None or after is None:
        return None
    return round(100.0 * (after - before) / seconds, 2)


async def measure(
    engine: str, broker: EmbeddedBroker, args: argparse.Namespace, logs: Path
) -> list[Window]:
    settings = bench_settings(f"idle-{engine}", broker, args.partitions, logs, "real")
    await ensure_topics(settings, CAPABILITIES)
    collector = Collector(settings)
    await collector.start()
    if engine in SERVED:
        command = [sys.executable, __file__, "--serve", engine]
        process = start_engine(engine, settings, logs / f"{engine}.log", command)
    else:
        process = start_engine(engine, settings, logs / f"{engine}.log")
    windows = []
    try:
        if engine not in SERVED:  # the worker answers: it is up
            collector.reset("warmup")
            await publish(settings, warmup("warmup"), None, "single")
            if not await collector.wait_for(1, 120):
                raise RuntimeError(f"{engine}: no warm-up warning; see {logs}")
        await asyncio.sleep(args.settle)  # start-up work (index prewarm, first sweeps) ends
        for name, rate in RATES.items():
            tag = f"{name}-{uuid.uuid4().hex[:4]}"
            sent = collector.reset(tag)
            engine_before = process_cpu_s(process.pid)
            broker_before = process_cpu_s(broker.process.pid)  # type: ignore[union-attr]
            started = time.monotonic()
            if rate:
                events = real(int(rate * args.window), args.concurrent, seed=1, tag=tag)
                await publish(settings, events, rate, "single", sent)
            remaining = args.window - (time.monotonic() - started)
            if remaining > 0:
                await asyncio.sleep(remaining)
            seconds = time.monotonic() - started
            latencies = collector.latencies_ms
            windows.append(
                Window(
                    engine,
                    name,
                    round(seconds, 1),
                    share(engine_before, process_cpu_s(process.pid), seconds),
                    share(broker_before, process_cpu_s(broker.process.pid), seconds),  # type: ignore[union-attr]
                    collector.count,
                    percentile(latencies, 0.5),
                    percentile(latencies, 0.99),
                )
            )
            print(f"  {engine} {name}: {windows[-1]}", flush=True)
    finally:
        await collector.stop()
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:  # measured already: do not lose the run over it
            print(f"  {engine} did not stop within 20 s of SIGTERM: killed", flush=True)
            process.kill()
            process.wait(10)
    return windows


def print_table(windows: list[Window]) -> None:
    header = f"{'engine':<14}{'window':<9}{'engine % core':>14}{'broker % core':>15}"
    header += f"{'warnings':>10}{'p50 ms':>9}{'p99 ms':>9}"
    print("\n" + header + "\n" + "-" * len(header))
    for w in windows:
        p50 = f"{w.p50_ms:.1f}" if w.p50_ms is not None else "-"
        p99 = f"{w.p99_ms:.1f}" if w.p99_ms is not None else "-"
        print(
            f"{w.engine:<14}{w.window:<9}{w.engine_core_pct or 0:>14.2f}"
            f"{w.broker_core_pct or 0:>15.2f}{w.warnings:>10}{p50:>9}{p99:>9}"
        )


async def main(args: argparse.Namespace) -> int:
    rows: list[dict[str, object]] = []
    for kind in args.brokers:
        windows: list[Window] = []
        with bench_broker(kind) as broker:
            for engine in args.engines:
                windows += await measure(engine, broker, args, LOGS)
        print(f"\n{kind} broker:")
        print_table(windows)
        rows += [{"broker": kind, **asdict(w)} for w in windows]
    write_results("idle_cost", rows)
    return 0


async def serve_adaptive_raw_consumer() -> None:
    """The floor with the worker's fetch wait."""
    await serve_raw_consumer(adaptive=True)


SERVED = {
    "raw-consumer": serve_raw_consumer,
    "raw-adaptive": serve_adaptive_raw_consumer,
    "subscriber": serve_subscriber,
}
"""Engines this script runs itself (``--serve NAME``)."""


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--window", type=float, default=30.0, help="seconds per window")
    parser.add_argument(
        "--brokers",
        nargs="+",
        default=["embedded"],
        choices=["embedded", "kafka"],
        help="measure on each: the embedded Tansu, one Apache Kafka node (Java)",
    )
    parser.add_argument("--settle", type=float, default=10.0, help="seconds after warm-up")
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--concurrent", type=int, default=200, help="real runs at a time")
    parser.add_argument(
        "--engines",
        nargs="+",
        default=["raw-consumer", "loopwarden"],
        choices=[*SERVED, "loopwarden"],
    )
    parser.add_argument("--serve", choices=SERVED, help=argparse.SUPPRESS)
    return parser.parse_args()


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    arguments = parse_args()
    if arguments.serve:
        asyncio.run(SERVED[arguments.serve]())
    else:
        sys.exit(asyncio.run(main(arguments)))
