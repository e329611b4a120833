"""The engines the benchmarks start, and the settings of one repetition.

- ``loopwarden`` / ``loopwarden-all`` / ``loopwarden-observed``: a real ``loopwarden
  worker`` process (see ``action_monitor.py`` for what each runs);
- ``raw-processor`` / ``raw-trivial``: plain aiokafka around loopwarden's
  RecordProcessor, or around a dict streak check (:func:`serve_raw`, run as
  ``action_monitor.py --serve ENGINE``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from bench_measure import kafka_worker_settings
from workloads import PROFILES

from loopwarden.settings import Settings, TelemetrySettings, settings_env
from loopwarden.streams.tools.broker import EmbeddedBroker, free_port

ACTION_MONITOR = Path(__file__).with_name("action_monitor.py")


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
    settings = settings.model_copy(
        update={
            "data_dir": str(local),
            "memory": settings.memory.model_copy(update={"uri": str(local / "memory")}),
            "detection": settings.detection.model_copy(
                update={"profile": PROFILES[workload] or settings.detection.profile}
            ),
        }
    )
    if isinstance(broker, EmbeddedBroker):
        return settings
    return kafka_worker_settings(settings)  # docker-compose's workers' (infra/worker-kafka.env)


# -- engines ----------------------------------------------------------------------------------


PREVIOUS_TREE = "LOOPWARDEN_BENCH_PREVIOUS"
"""The environment variable naming the tree of the ``loopwarden-previous`` engine."""


def start_engine(
    engine: str, settings: Settings, log: Path, command: list[str] | None = None
) -> subprocess.Popen[bytes]:
    """Start ``engine`` with ``settings`` (``command``: run that instead, e.g. another
    script's baseline)."""
    env = {**os.environ, **settings_env(settings)}
    cwd = None
    if command is not None:
        pass
    elif engine.startswith("loopwarden"):
        command = [sys.executable, "-m", "loopwarden", "worker"]
        if engine == "loopwarden-previous":  # another checkout's worker, first on the path
            env["PYTHONPATH"] = os.environ[PREVIOUS_TREE]
            cwd = os.environ[PREVIOUS_TREE]  # python -m puts the working directory first
        if engine in ("loopwarden", "loopwarden-observed", "loopwarden-previous"):
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
        command = [sys.executable, str(ACTION_MONITOR), "--serve", engine]
    with open(log, "ab") as out:
        return subprocess.Popen(
            command,
            env=env,
            cwd=cwd,
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
    from loopwarden.agents.monitor.declaration import LOOP_STATES
    from loopwarden.agents.monitor.records import RecordProcessor
    from loopwarden.schemas.dead_letter import SourcePosition
    from loopwarden.streams.runtime.blas_threads import limit_blas_threads
    from loopwarden.streams.runtime.state.offline import OfflineStates

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
    limit_blas_threads()  # the worker's setting: idle OpenBLAS threads spin after each encode
    states = OfflineStates.for_settings(LOOP_STATES, settings)
    streaks: dict[str, tuple[str, int]] = {}
    try:
        while True:
            batches = await consumer.getmany(timeout_ms=100, max_records=5000)
            for tp, records in batches.items():
                for record in records:
                    if engine == "raw-processor":
                        source = SourcePosition(tp.topic, tp.partition, record.offset)
                        outcome = states.apply(processor, record.value, record.key, source)
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
