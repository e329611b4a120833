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
- ``paced``: events published at R events/s; latency = warning received − the
  triggering event's send time, p50/p99.

Every run checks that the number of warnings equals what the engine's logic produces
offline for the same events (``raw-trivial``: its own streak rule). Prints a table and
writes JSON to ``benchmarks/results/``.

    .venv/bin/python benchmarks/action_monitor.py                  # defaults
    .venv/bin/python benchmarks/action_monitor.py --events 100000 --reps 3 --rate 500
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from quix_monitor import create_quix_topics, serve_quix
from workloads import PROFILES, Prepared, expected_warnings, real, synthetic, warmup

from loopwarden.agents.monitor.state import LoopState
from loopwarden.settings import Settings, TelemetrySettings, settings_env
from loopwarden.streams.client.publisher import AsyncPublisher
from loopwarden.streams.tools.broker import EmbeddedBroker, free_port
from loopwarden.streams.tools.topics import ensure_topics

RESULTS = Path(__file__).parent / "results"


# -- workload ----------------------------------------------------------------------------------


def events_of(
    workload: str, n: int, args: argparse.Namespace, seed: int, tag: str
) -> list[Prepared]:
    """The events of one repetition (see ``workloads.py``)."""
    if workload == "real":
        return real(n, args.concurrent, seed, tag)
    return synthetic(n, args.loops, seed, tag)


def bench_settings(
    tag: str, broker: EmbeddedBroker, partitions: int, logs: Path, workload: str = "synthetic"
) -> Settings:
    """Settings of one repetition: fresh topics and app id, its own data directory, and
    the detection profile of ``workload`` (the seed's rules for the synthetic mix they
    were built for, the default for real runs)."""
    settings = Settings().namespaced(
        f"{tag}-{uuid.uuid4().hex[:6]}",
        bootstrap_servers=broker.bootstrap_servers,
        partitions=partitions,
    )
    local = logs / "worker-data" / uuid.uuid4().hex[:6]
    return settings.model_copy(
        update={
            "data_dir": str(local),
            "memory": settings.memory.model_copy(update={"uri": str(local / "memory")}),
            "detection": settings.detection.model_copy(
                update={"profile": PROFILES[workload] or settings.detection.profile}
            ),
        }
    )


# -- engines ----------------------------------------------------------------------------------


def start_engine(
    engine: str, settings: Settings, log: Path, command: list[str] | None = None
) -> subprocess.Popen[bytes]:
    """Start ``engine`` with ``settings`` (``command``: run that instead, e.g. another
    script's baseline)."""
    if command is not None:
        pass
    elif engine.startswith("loopwarden"):
        command = [sys.executable, "-m", "loopwarden", "worker"]
        if engine in ("loopwarden", "loopwarden-observed"):  # the monitor (and the guardrails)
            settings = settings.model_copy(
                update={"analyst": settings.analyst.model_copy(update={"enabled": False})}
            )
        if engine == "loopwarden-observed":
            settings = settings.model_copy(
                update={
                    "web_port": free_port(),
                    "api": settings.api.model_copy(update={"token": "bench"}),
                    "telemetry": TelemetrySettings(
                        traces_exporter="otlp", otlp_endpoint=discarding_otlp_receiver()
                    ),
                }
            )
    else:
        command = [sys.executable, __file__, "--serve", engine]
    with open(log, "ab") as out:
        return subprocess.Popen(
            command,
            env={**os.environ, **settings_env(settings)},
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )


_RECEIVER: list[str] = []


def discarding_otlp_receiver() -> str:
    """The URL of an OTLP/HTTP endpoint in this process that answers 200 and drops spans."""
    if not _RECEIVER:

        class Discard(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Discard)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        _RECEIVER.append(f"http://127.0.0.1:{server.server_address[1]}")
    return _RECEIVER[0]


async def serve_raw(engine: str) -> None:
    """A baseline worker on plain aiokafka (run as a subprocess)."""
    from loopwarden.agents.monitor.records import RecordProcessor
    from loopwarden.schemas.dead_letter import SourcePosition

    settings = Settings()
    kafka, topics = settings.kafka, settings.topics
    consumer = AIOKafkaConsumer(
        topics.actions,
        bootstrap_servers=kafka.bootstrap_servers,
        group_id=settings.app_id,
        enable_auto_commit=True,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=kafka.fetch_max_wait_ms,
        max_poll_records=5000,
        session_timeout_ms=int(kafka.session_timeout_s * 1000),
        heartbeat_interval_ms=int(kafka.heartbeat_interval_s * 1000),
    )
    producer = AIOKafkaProducer(
        bootstrap_servers=kafka.bootstrap_servers, linger_ms=2, max_batch_size=1024 * 1024
    )
    await consumer.start()
    await producer.start()
    processor = RecordProcessor.for_settings(settings)
    states: dict[str, LoopState] = {}
    streaks: dict[str, tuple[str, int]] = {}
    try:
        while True:
            batches = await consumer.getmany(timeout_ms=100, max_records=5000)
            for tp, records in batches.items():
                for record in records:
                    if engine == "raw-processor":
                        source = SourcePosition(tp.topic, tp.partition, record.offset)
                        outcome = processor.process(record.value, record.key, source, states.get)
                        states.update(outcome.states)
                        for w in outcome.warnings:
                            await producer.send(
                                topics.warnings, orjson.dumps(w), key=w["loop_id"].encode()
                            )
                        for r in outcome.requests:
                            await producer.send(
                                topics.reflection_requests,
                                orjson.dumps(r),
                                key=r["loop_id"].encode(),
                            )
                        continue
                    events = orjson.loads(record.value)
                    for event in events if isinstance(events, list) else [events]:
                        loop_id = event["loop_id"]
                        action = event["payload"]["action_type"]
                        prev, count = streaks.get(loop_id, ("", 0))
                        count = count + 1 if prev == action else 1
                        streaks[loop_id] = (action, count)
                        if count >= 3:
                            warning = {
                                "loop_id": loop_id,
                                "trigger_event_id": event["event_id"],
                                "kind": "action_type_spin",
                                "occurred_at": event["occurred_at"],
                                "consecutive_count": count,
                            }
                            await producer.send(
                                topics.warnings, orjson.dumps(warning), key=loop_id.encode()
                            )
    finally:
        await consumer.stop()
        await producer.stop()


# -- measurement ------------------------------------------------------------------------------


class Collector:
    """Counts the monitor's warnings on the warnings topic and records their latency:
    received − the triggering event's send time (``sent``, by event id)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.latencies_ms: list[float] = []
        self.count = 0
        self.last_at = 0.0
        self._consumer: AIOKafkaConsumer | None = None
        self._task: asyncio.Task[None] | None = None
        self.prefix = ""
        self.sent: dict[str, float] = {}

    async def start(self) -> None:
        self._consumer = AIOKafkaConsumer(
            bootstrap_servers=self.settings.kafka.bootstrap_servers,
            enable_auto_commit=False,
            fetch_max_wait_ms=5,
            auto_offset_reset="earliest",
        )
        await self._consumer.start()
        tps = [
            TopicPartition(self.settings.topics.warnings, p)
            for p in range(self.settings.topics.partitions)
        ]
        self._consumer.assign(tps)
        await self._consumer.seek_to_beginning(*tps)
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        assert self._consumer is not None
        while True:
            batches = await self._consumer.getmany(timeout_ms=100, max_records=10000)
            now = time.time()
            for records in batches.values():
                for record in records:
                    if self.prefix and not record.key.startswith(self.prefix.encode()):
                        continue
                    warning = orjson.loads(record.value)
                    if warning["kind"] == "logic_spin":  # the analyst's (loopwarden-all)
                        continue
                    self.count += 1
                    self.last_at = now
                    sent = self.sent.get(warning.get("trigger_event_id", ""))
                    if sent is not None:
                        self.latencies_ms.append((now - sent) * 1000.0)

    def reset(self, prefix: str) -> dict[str, float]:
        """Count warnings of loops starting with ``prefix`` from now on; returns the
        send-time map to fill while publishing."""
        self.prefix, self.count, self.last_at, self.latencies_ms = prefix, 0, 0.0, []
        self.sent = {}
        return self.sent

    async def wait_for(self, count: int, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while self.count < count and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        return self.count >= count

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
        if self._consumer:
            await self._consumer.stop()


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


def process_cpu_s(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def publish(
    settings: Settings,
    events: list[Prepared],
    rate: float | None,
    shape: str,
    sent: dict[str, float] | None = None,
) -> float:
    """Publish the encoded ``events``; return the wall time of the first publish and
    note each event's send time in ``sent``.

    ``batched``: through ``AsyncPublisher`` (up to 50 events of one partition per
    record). ``single``: one event per record through librdkafka (confluent-kafka),
    as a Java, Go or kcat producer would send them.
    """
    sent = {} if sent is None else sent
    start = time.time()
    if shape == "single":
        from confluent_kafka import Producer

        producer = Producer(
            {
                "bootstrap.servers": settings.kafka.bootstrap_servers,
                "linger.ms": 1 if rate else 5,
                "partitioner": "murmur2_random",  # Kafka's default (Java) partitioner
                "queue.buffering.max.messages": 1_000_000,
            }
        )
        topic = settings.topics.actions
        async for item in _paced(events, rate, start, sent):
            producer.produce(topic, item.data, key=item.loop_id.encode())
            producer.poll(0)
        await asyncio.to_thread(producer.flush, 60)
        return start
    async with AsyncPublisher(settings) as publisher:
        async for item in _paced(events, rate, start, sent):
            publisher.enqueue(item.loop_id, item.event_id, item.data)
        await publisher.flush()
    return start


async def _paced(
    events: list[Prepared], rate: float | None, start: float, sent: dict[str, float]
) -> AsyncIterator[Prepared]:
    """``events`` at ``rate`` per second (or at once, yielding to the event loop every
    5,000 so that batches go out), each one's send time noted in ``sent``."""
    interval = 1.0 / rate if rate else 0.0
    for i, item in enumerate(events):
        now = time.time()
        if rate:
            target = start + i * interval
            if target > now:
                await asyncio.sleep(target - now)
                now = time.time()
        elif i % 5000 == 4999:
            await asyncio.sleep(0)
        sent[item.event_id] = now
        yield item


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
    engine: str, broker: EmbeddedBroker, args: argparse.Namespace, logs: Path, plans: Plans
) -> list[Run]:
    """Every repetition on fresh topics with a freshly started engine (the embedded
    broker's fetch latency grows with a topic's length)."""
    runs: list[Run] = []
    modes = [("sat", args.events, None)] * args.reps + [
        ("paced", args.paced_events, args.rate)
    ] * args.reps
    for workload in args.workloads:
        for shape in args.shapes:
            if engine == "quix" and shape != "single":
                continue  # a Quix state is the state of a record's key: one loop per record
            for rep, (mode, n, rate) in enumerate(modes):
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
    await ensure_topics(settings)
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
                for mode in ("sat", "paced"):
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
    }


def print_table(rows: list[dict[str, object]]) -> None:
    header = (
        f"{'workload':<10}{'engine':<14} {'shape':<7} {'mode':<6} {'events':>7} {'warn/100':>8} "
        f"{'events/s':>10} {'vs raw':>7} {'p50 ms':>8} {'p99 ms':>8} {'µs CPU/ev':>9} "
        f"{'ready s':>7} ok"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        ratio = r["throughput_vs_raw_trivial"]
        cpu = r["worker_cpu_us_per_event"]
        print(
            f"{r['workload']:<10}{r['engine']:<14} {r['shape']:<7} {r['mode']:<6} "
            f"{r['events']:>7} {r['warnings_per_100']:>8} "
            f"{r['events_per_s']:>10,.0f} {ratio if ratio is not None else '-':>7} "
            f"{r['p50_ms'] or 0:>8.1f} {r['p99_ms'] or 0:>8.1f} "
            f"{cpu if cpu is not None else '-':>9} {r['startup_s']:>7.1f} "
            f"{'yes' if r['all_ok'] else 'NO'}"
        )


async def main(args: argparse.Namespace) -> int:
    logs = RESULTS / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    runs: list[Run] = []
    with EmbeddedBroker(log_path=logs / "broker.log") as broker:
        print(f"broker on {broker.bootstrap_servers}", flush=True)
        plans = Plans(args)
        for engine in args.engines:
            runs.extend(await run_engine(engine, broker, args, logs, plans))
    rows = summarize(runs)
    print()
    print_table(rows)
    out = RESULTS / f"action_monitor-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(
        json.dumps(
            {"args": vars(args), "summary": rows, "runs": [asdict(r) for r in runs]}, indent=2
        )
    )
    print(f"\nwrote {out}")
    return 0 if all(r["all_ok"] for r in rows) else 1


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=100_000, help="events per sat rep")
    parser.add_argument("--paced-events", type=int, default=5_000, help="events per paced rep")
    parser.add_argument("--rate", type=float, default=500.0, help="paced events/s")
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
        ],
    )
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    return parser.parse_args()


def _exit_on_sigterm(signum: int, frame: object) -> None:
    # `timeout` sends SIGTERM: unwind so the broker and workers we started are stopped.
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    arguments = parse_args()
    if arguments.serve == "quix":
        serve_quix(Settings())
    elif arguments.serve:
        asyncio.run(serve_raw(arguments.serve))
    else:
        sys.exit(asyncio.run(main(arguments)))
