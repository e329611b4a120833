"""Integration fixtures: a real broker and real worker processes.

The broker is the embedded Tansu, or with ``--broker kafka`` one Apache Kafka KRaft
node (``tests/support/apache_kafka.py``); it runs once per test process on free
loopback ports. Each worker is a
``loopwarden worker`` child process (forked from a warm interpreter unless a test asks
for a cold start: ``tests/support/warm_processes.py``) with its own app id and topic names, so
tests do not see each other's records. Everything is stopped by the pid the
fixture started.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import aiohttp
import pytest
from apache_kafka import KafkaCluster
from test_brokers import broker_kind, kafka_worker_settings, new_test_broker
from warm_processes import WarmWorker, start_warm_worker

from loopwarden.agents.capabilities import CAPABILITIES
from loopwarden.cli.runtime import start_worker_process, stop_process
from loopwarden.schemas.warnings import WarningKind
from loopwarden.settings import LimitSettings, Settings, settings_env
from loopwarden.streams.client.subscriber import WarningSubscriber
from loopwarden.streams.tools.broker import EmbeddedBroker
from loopwarden.streams.tools.topics import ensure_topics

pytestmark = pytest.mark.integration


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker | KafkaCluster]:
    """The session's broker: the embedded Tansu, or one Apache Kafka node with
    ``--broker kafka`` (``make test-kafka``)."""
    log = tmp_path_factory.mktemp("broker") / "broker.log"
    with new_test_broker(log) as running:
        if isinstance(running, KafkaCluster):
            print(f"\n{running.describe()}", file=sys.stderr)
        yield running


_WORKER_DIRS: list[str] = []


@pytest.fixture(scope="session", autouse=True)
def _remove_worker_dirs() -> Iterator[None]:
    """The data directories :func:`isolated_settings` made (every worker's LanceDB
    store and table files) are removed once the session's workers have stopped."""
    yield
    for folder in _WORKER_DIRS:
        shutil.rmtree(folder, ignore_errors=True)


def isolated_settings(
    broker: EmbeddedBroker | KafkaCluster, name: str, roles: Iterable[str] = (), **limits: float
) -> Settings:
    """Settings with a unique app id and topic names on the test broker; ``roles``: the
    agents the worker runs (default: every default role). A test that reads one role's
    outputs names it: a worker start with the monitor alone costs ~1.3 s of CPU, with
    every role ~4 s (LanceDB, the embedder's weights, seven agents' tables)."""
    settings = Settings().namespaced(
        f"{name}-{uuid.uuid4().hex[:8]}", bootstrap_servers=broker.bootstrap_servers, partitions=4
    )
    if roles:
        settings = settings.model_copy(update={"roles": frozenset(roles)})
    if limits:
        settings = settings.model_copy(update={"limits": LimitSettings(**limits)})
    local = tempfile.mkdtemp(prefix="lw-worker-")
    _WORKER_DIRS.append(local)
    memory = settings.memory.model_copy(update={"uri": f"{local}/memory"})
    # the wiring tests count on the seed's triggers (three actions of one type, any
    # failure); the default profile's decisions are the unit tests' and the demo's
    detection = settings.detection.model_copy(update={"profile": "seed"})
    settings = settings.model_copy(
        update={"log_level": "info", "memory": memory, "data_dir": local, "detection": detection}
    )
    # on Apache Kafka, the compose workers' client settings (infra/worker-kafka.env)
    return kafka_worker_settings(settings) if broker_kind() == "kafka" else settings


class WorkerProcess:
    """One ``loopwarden worker`` child process: forked from a warm interpreter
    (``tests/support/warm_processes.py``), or started cold (``cold=True``: a new
    ``python -m loopwarden worker``, as the restart tests need)."""

    def __init__(self, settings: Settings, log_path: Path, *, cold: bool = False) -> None:
        self.settings = settings
        self.log_path = log_path
        self.cold = cold
        self.process: subprocess.Popen[bytes] | WarmWorker | None = None

    def start(self) -> WorkerProcess:
        if self.cold:
            self.process = start_worker_process(self.settings, str(self.log_path))
        else:
            env = {**os.environ, **settings_env(self.settings)}
            self.process = start_warm_worker(env, str(self.log_path))
        return self

    def stop(self) -> int | None:
        assert self.process is not None
        return stop_process(self.process)

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait(10)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


def create_topics(settings: Settings) -> None:
    """Create the topics, also when called from inside a running event loop."""
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, ensure_topics(settings, CAPABILITIES)).result(30)


@pytest.fixture
def worker_factory(tmp_path: Path) -> Iterator:
    started: list[WorkerProcess] = []

    def start(settings: Settings, name: str = "worker", *, cold: bool = False) -> WorkerProcess:
        create_topics(settings)
        log = tmp_path / f"{name}-{len(started)}.log"
        worker = WorkerProcess(settings, log, cold=cold).start()
        started.append(worker)
        return worker

    yield start
    for worker in started:
        if worker.process is not None and worker.process.poll() is None:
            worker.stop()


@pytest.fixture(scope="module")
def shared_settings(broker: EmbeddedBroker) -> Settings:
    return isolated_settings(broker, "shared", max_event_bytes=4096)


@pytest.fixture(scope="module")
def shared_worker(
    shared_settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkerProcess]:
    """One worker with every default role for a module's tests (each uses loop ids of
    its own). Module-scoped: an idle worker and the broker answering its fetches burn
    CPU until stopped, and a session-scoped one idled on after its last module."""
    create_topics(shared_settings)
    worker = WorkerProcess(shared_settings, tmp_path_factory.mktemp("worker") / "worker.log")
    worker.start()
    yield worker
    code = worker.stop()
    assert code == 0, f"worker exited with {code}:\n{worker.log()[-4000:]}"


async def http_call(session, method, url, *, json=None, token=None, data=None, retry_s=60):
    """One request; 503 (assignment not known yet) is retried."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    deadline = asyncio.get_running_loop().time() + retry_s
    while True:
        try:
            async with session.request(
                method, url, json=json, data=data, headers=headers
            ) as response:
                body = await response.json(content_type=None)
                if response.status != 503 or asyncio.get_running_loop().time() > deadline:
                    return response.status, body, response.headers
        except aiohttp.ClientConnectionError:
            if asyncio.get_running_loop().time() > deadline:
                raise
        await asyncio.sleep(0.3)


class LayerOneWarnings(WarningSubscriber):
    """Only Layer 1 warnings (the analyst's logic-spin confirmations are left out)."""

    async def _iterate(self):
        async for warning in super()._iterate():
            if warning.kind is WarningKind.ACTION_TYPE_SPIN:
                yield warning


@pytest.fixture(scope="session")
def laddered(broker, tmp_path_factory):
    """A worker with the laddered detection profile, and a connected guard: one pair for
    every adapter test of the session (each test uses loop ids of its own)."""
    from loopwarden.adapters.guard import LoopGuard

    from .adapter_harness import laddered_settings

    settings = laddered_settings(broker, "adapters")
    create_topics(settings)
    worker = WorkerProcess(settings, tmp_path_factory.mktemp("adapters") / "worker.log").start()
    guard = LoopGuard(settings).start()
    assert guard.wait_ready(60)
    for n in range(4):  # a spin answered: the worker is up (and handles SIGTERM at teardown)
        guard.tool_call("warm-up", "probe", {}, result="same", tool_call_id=f"w{n}")
    assert guard.inbox.wait("warm-up", count=1, timeout_s=90), worker.log()[-3000:]
    yield settings, guard
    guard.close()
    assert worker.stop() == 0, worker.log()[-3000:]
