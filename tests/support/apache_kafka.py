"""Apache Kafka for the suites: one KRaft node or a cluster of them, on loopback.

The jars come from Maven Central through ``infra/kafka/pom.xml`` (pinned to the
version of ``docker-compose.yml``'s image) into a cache folder, once per machine.
Each node runs ``kafka.Kafka`` in combined mode (broker and controller) in a JVM of
its own, with a small heap, in a session of its own that dies with its parent, and is
stopped, killed, paused or restarted from its own log directory by the pid this module
started, never by name.

:class:`KafkaCluster` has the embedded broker's interface (``bootstrap_servers``,
``host``, ``port``, ``start``, ``stop``, a context manager), so a fixture can hand
either to a test (``--broker kafka`` or ``LOOPWARDEN_TEST_BROKER=kafka``).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from kafka_security import LISTENER, SaslSslListener

from loopwarden.cli.runtime import stop_process
from loopwarden.errors import BrokerError, ConfigurationError
from loopwarden.streams.tools.broker import free_port, port_in_use
from loopwarden.streams.tools.children import die_with_parent

ROOT = Path(__file__).resolve().parents[2]
POM = ROOT / "infra" / "kafka" / "pom.xml"
LOG_CONFIG = ROOT / "infra" / "kafka" / "log4j2.yaml"
READY_LINE = "Kafka Server started"
HEAP = ("-Xms64m", "-Xmx384m", "-XX:+UseSerialGC")
"""A broker is a JVM: a small heap (a test node holds a few thousand records), the
serial collector (two cores shared with the workers and the tests)."""

TEST_BROKER_CONFIG: dict[str, str] = {
    # as docker-compose.yml's broker: every topic is created by name, with its configs
    "auto.create.topics.enable": "false",
    # a group's first join is not held back 3 s for more members (tests start one)
    "group.initial.rebalance.delay.ms": "0",
    # the offsets topic is made at the first group: 50 partitions cost seconds here
    "offsets.topic.num.partitions": "8",
    # the cleaner looks for work each second, not every 15 s (the compaction tests)
    "log.cleaner.backoff.ms": "1000",
    "log.segment.delete.delay.ms": "1000",
}
"""Broker settings of the test nodes that differ from Apache Kafka's defaults: no topic
auto-created (as in docker-compose.yml), the others for speed alone; topic configs and
client settings stay those a worker uses anywhere."""


def kafka_version() -> str:
    """The Apache Kafka version pinned in ``infra/kafka/pom.xml``."""
    found = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", POM.read_text())
    if not found:
        raise ConfigurationError(f"{POM} names no <kafka.version>")
    return found.group(1)


def cache_dir() -> Path:
    """Where the jars of :func:`kafka_version` are kept (``LOOPWARDEN_KAFKA_CACHE``)."""
    base = os.environ.get("LOOPWARDEN_KAFKA_CACHE") or Path.home() / ".cache/loopwarden/kafka"
    return Path(base) / kafka_version()


def _require(command: str, why: str) -> str:
    found = shutil.which(command)
    if not found:
        raise BrokerError(f"Apache Kafka needs {why} ({command} is not on PATH)")
    return found


def fetch_jars(progress: bool = True) -> list[Path]:
    """The broker's jars, fetched by Maven into :func:`cache_dir` the first time.

    Test processes start together: the first takes a lock and fetches, the others
    wait for it and then read the same folder.
    """
    target = cache_dir()
    done = target / ".complete"
    if not done.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target.parent / f".{target.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not done.exists():
                _download(target, progress)
    return sorted(target.glob("*.jar"))


def _download(target: Path, progress: bool) -> None:
    mvn = _require("mvn", "Maven to fetch its jars from Maven Central")
    staging = Path(tempfile.mkdtemp(prefix=".fetch-", dir=target.parent))
    if progress:
        print(f"fetching Apache Kafka {kafka_version()} with Maven into {target}", file=sys.stderr)
    command = [
        mvn, "-B", "-q", "-f", str(POM), "dependency:copy-dependencies",
        f"-DoutputDirectory={staging}", "-DincludeScope=runtime",
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise BrokerError(f"Maven could not fetch Apache Kafka:\n{result.stdout[-3000:]}")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    (target / ".complete").write_text(kafka_version())


def new_cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


@dataclass
class KafkaNode:
    """One KRaft node (broker and controller) of a :class:`KafkaCluster`."""

    node_id: int
    port: int
    controller_port: int
    folder: Path
    advertised_port: int | None = None
    extra_listeners: dict[str, int] = field(default_factory=dict)
    """More client listeners, by name (= security protocol): ``{"SASL_SSL": port}``."""
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def log_dir(self) -> Path:
        return self.folder / "data"

    @property
    def log_path(self) -> Path:
        return self.folder / "server.log"

    @property
    def config_path(self) -> Path:
        return self.folder / "server.properties"

    def write_config(self, voters: str, replicas: int, extra: dict[str, str]) -> None:
        host = "127.0.0.1"
        more = "".join(f",{name}://{host}:{port}" for name, port in self.extra_listeners.items())
        protocols = "".join(f",{name}:{name}" for name in self.extra_listeners)
        config = {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            "controller.quorum.voters": voters,
            "listeners": f"PLAINTEXT://{host}:{self.port},CONTROLLER://{host}:{self.controller_port}"
            + more,
            "advertised.listeners": f"PLAINTEXT://{host}:{self.advertised_port or self.port}"
            + more,
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
            + protocols,
            "log.dirs": str(self.log_dir),
            "offsets.topic.replication.factor": str(replicas),
            "transaction.state.log.replication.factor": str(replicas),
            "transaction.state.log.min.isr": str(min(2, replicas)),
            **TEST_BROKER_CONFIG,
            **extra,
        }
        self.folder.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in config.items()))

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def launch(self, classpath: str) -> None:
        """Start the JVM (the log directory must be formatted)."""
        for port in (self.port, self.controller_port):
            if port_in_use("127.0.0.1", port):
                raise BrokerError(f"port {port} on 127.0.0.1 is in use")
        java = _require("java", "Java 17 or newer")
        command = [
            java, *HEAP, f"-Dlog4j2.configurationFile={LOG_CONFIG}",
            "-cp", classpath, "kafka.Kafka", str(self.config_path),
        ]  # fmt: skip
        with open(self.log_path, "ab") as output:
            self.process = subprocess.Popen(
                command,
                stdout=output,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=die_with_parent(),
            )

    def wait_ready(self, since: int, timeout_s: float) -> None:
        """Until the log says the server started (after byte ``since``), or raise."""
        deadline = time.monotonic() + timeout_s
        while True:
            text = self.log_path.read_bytes()[since:].decode(errors="replace")
            if READY_LINE in text:
                return
            if not self.running:
                raise BrokerError(f"Kafka node {self.node_id} exited:\n{text[-3000:]}")
            if time.monotonic() > deadline:
                raise BrokerError(f"Kafka node {self.node_id} not started after {timeout_s}s")
            time.sleep(0.1)

    def signal(self, number: signal.Signals) -> None:
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, number)

    def stop(self, timeout_s: float = 20.0) -> None:
        """SIGTERM (a controlled shutdown), SIGKILL when it does not end in time."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGCONT)  # a paused node cannot shut down
        stop_process(process, timeout_s)


class KafkaCluster:
    """``nodes`` Apache Kafka KRaft nodes on loopback; the embedded broker's interface.

    ``broker_config`` adds broker settings (e.g. ``min.insync.replicas``);
    ``advertised_port`` (one node only) makes clients connect through a proxy.
    """

    def __init__(
        self,
        nodes: int = 1,
        *,
        workdir: Path | None = None,
        log_path: Path | None = None,
        broker_config: dict[str, str] | None = None,
        advertised_port: int | None = None,
        secured: bool = False,
    ) -> None:
        if nodes < 1:
            raise ConfigurationError("a Kafka cluster has at least one node")
        if (advertised_port or secured) and nodes > 1:
            raise ConfigurationError("a proxy port or a secured listener is for one node")
        self._own_workdir = workdir is None
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="lw-kafka-"))
        self.log_path = log_path  # the nodes' logs are copied there at stop
        self.broker_config = dict(broker_config or {})
        self.host = "127.0.0.1"
        self.version = kafka_version()
        self.nodes = [
            KafkaNode(
                node_id=n,
                port=free_port(),
                controller_port=free_port(),
                folder=self.workdir / f"node-{n}",
                advertised_port=advertised_port,
            )
            for n in range(1, nodes + 1)
        ]
        self._classpath = ""
        self.secured: SaslSslListener | None = None
        if secured:  # a SASL_SSL listener beside the PLAINTEXT one
            self.secured = SaslSslListener(self.workdir / "tls", free_port())
            self.nodes[0].extra_listeners[LISTENER] = self.secured.port
            self.broker_config.update(self.secured.broker_config())

    @property
    def port(self) -> int:
        """The first node's client port."""
        return self.nodes[0].port

    @property
    def advertised_port(self) -> int:
        return self.nodes[0].advertised_port or self.port

    @property
    def bootstrap_servers(self) -> str:
        """Every node's ``host:port``, comma-separated, for Kafka clients."""
        return ",".join(f"{self.host}:{node.port}" for node in self.nodes)

    @property
    def process(self) -> subprocess.Popen[bytes] | None:
        """The first node's JVM."""
        return self.nodes[0].process

    def describe(self) -> str:
        nodes = f"{len(self.nodes)} node{'s' * (len(self.nodes) > 1)}"
        return f"Apache Kafka {self.version} (KRaft, {nodes}) on {self.bootstrap_servers}"

    def start(self, timeout_s: float = 120.0) -> KafkaCluster:
        """Fetch the jars if needed, format every node, start them, wait until all run."""
        self._classpath = ":".join(str(jar) for jar in fetch_jars())
        voters = ",".join(f"{n.node_id}@{self.host}:{n.controller_port}" for n in self.nodes)
        replicas = min(3, len(self.nodes))
        cluster_id = new_cluster_id()
        if self.secured is not None:
            self.secured.make_certificate()
        for node in self.nodes:
            node.write_config(voters, replicas, self.broker_config)
            self._format(node, cluster_id)
        try:
            for node in self.nodes:
                node.launch(self._classpath)
            for node in self.nodes:
                node.wait_ready(0, timeout_s)
        except BrokerError:
            self.stop()
            raise
        return self

    def _format(self, node: KafkaNode, cluster_id: str) -> None:
        java = _require("java", "Java 17 or newer")
        command = [
            java, *HEAP, f"-Dlog4j2.configurationFile={LOG_CONFIG}", "-cp", self._classpath,
            "kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}",  # may start with '-'
            "--config", str(node.config_path),
            *(self.secured.format_args() if self.secured else ()),
        ]  # fmt: skip
        result = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise BrokerError(
                f"formatting node {node.node_id} failed:\n{result.stdout}{result.stderr}"
            )

    # -- faults, by the pid this cluster started -----------------------------------------
    def kill(self, node_id: int) -> None:
        """``kill -9`` one node: no controlled shutdown, its log directory as it was."""
        node = self.node(node_id)
        if node.process is not None:
            node.process.kill()
            node.process.wait(20)
            node.process = None

    def restart(self, node_id: int, timeout_s: float = 120.0) -> None:
        """Start a stopped or killed node again from its own log directory."""
        node = self.node(node_id)
        if node.running:
            raise BrokerError(f"node {node_id} is running")
        since = node.log_path.stat().st_size if node.log_path.exists() else 0
        node.launch(self._classpath)
        node.wait_ready(since, timeout_s)

    def pause(self, node_id: int) -> None:
        """Cut a node off: SIGSTOP freezes it (its sessions time out, it stays 'up')."""
        self.node(node_id).signal(signal.SIGSTOP)

    def resume(self, node_id: int) -> None:
        self.node(node_id).signal(signal.SIGCONT)

    def node(self, node_id: int) -> KafkaNode:
        for node in self.nodes:
            if node.node_id == node_id:
                return node
        raise ConfigurationError(f"no node {node_id} in this cluster")

    def stop(self) -> None:
        """Stop every node this cluster started; copy their logs to ``log_path``."""
        for node in self.nodes:
            node.stop()
        if self.log_path is not None:
            with open(self.log_path, "ab") as out:
                for node in self.nodes:
                    if node.log_path.exists():
                        out.write(f"==== node {node.node_id}\n".encode())
                        out.write(node.log_path.read_bytes())
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> KafkaCluster:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
