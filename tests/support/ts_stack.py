"""The broker and the worker the TypeScript client's suite runs against, started the way
the Python suite's fixtures start them: :func:`new_test_broker` (the embedded Tansu, or
one Apache Kafka node with ``LOOPWARDEN_TEST_BROKER=kafka``), topics with names of their
own and a ``loopwarden worker`` process (``isolated_settings``, ``create_topics``,
``WorkerProcess`` of tests/integration/conftest.py), with the default detection profile a
reader gets.

Prints the worker's ``LOOPWARDEN_*`` settings, one ``NAME=value`` a line (the clients
read the same variables), then ``ready``; keeps both running until its standard input
closes or it is signalled, then stops the worker and the broker by the pids it started
(printing the worker's last log lines first when the input said ``failed``). On Apache
Kafka the node also has a SASL_SSL listener (SCRAM over TLS, a certificate made for the
run): its client settings follow, each line ``secured NAME=value``.
"""

from __future__ import annotations

import secrets
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "integration")]

from apache_kafka import KafkaCluster  # noqa: E402
from pydantic import SecretStr  # noqa: E402
from test_brokers import broker_kind, new_test_broker  # noqa: E402

from conftest import WorkerProcess, create_topics, isolated_settings  # noqa: E402
from loopwarden.settings import DetectionSettings, Settings, settings_env  # noqa: E402
from loopwarden.streams.tools.broker import free_port  # noqa: E402

READY_LIMIT_S = 120.0


def wait_ready(worker: WorkerProcess) -> None:
    """Until the worker has joined and recovered ("worker ready" in its log)."""
    deadline = time.monotonic() + READY_LIMIT_S
    assert worker.process is not None
    while "worker ready" not in worker.log():
        if worker.process.poll() is not None:
            raise SystemExit(f"the worker exited ({worker.process.returncode}):\n{worker.log()}")
        if time.monotonic() > deadline:
            raise SystemExit(f"no worker ready within {READY_LIMIT_S:.0f} s:\n{worker.log()}")
        time.sleep(0.2)


def secured_env(broker: KafkaCluster, settings: Settings) -> dict[str, str]:
    """The client settings of the SASL_SSL listener (the same topics)."""
    assert broker.secured is not None
    kafka = settings.kafka.model_copy(
        update={
            "bootstrap_servers": broker.secured.bootstrap_servers,
            "security": broker.secured.client_security(),
        }
    )
    env = settings_env(settings.model_copy(update={"kafka": kafka}))
    return {name: value for name, value in env.items() if name.startswith("LOOPWARDEN_KAFKA__")}


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    scratch = Path(tempfile.mkdtemp(prefix="lw-ts-stack-"))
    try:
        log = scratch / "broker.log"
        kafka = broker_kind() == "kafka"
        # on Apache Kafka, a SASL_SSL listener too (SCRAM over TLS): the clients'
        # security settings are tested against it
        with (
            KafkaCluster(1, log_path=log, secured=True) if kafka else new_test_broker(log) as broker
        ):
            settings = isolated_settings(broker, "typescript")
            # the web API too, with a token (it serves overrides): the guard's memory
            # recall asks the worker's memory search, with the bearer token the tests read
            api = settings.api.model_copy(update={"token": SecretStr(secrets.token_hex(16))})
            settings = settings.model_copy(
                update={"detection": DetectionSettings(), "web_port": free_port(), "api": api}
            )
            create_topics(settings)
            worker = WorkerProcess(settings, scratch / "worker.log").start()
            try:
                wait_ready(worker)
                for name, value in sorted(settings_env(settings).items()):
                    print(f"{name}={value}")
                if isinstance(broker, KafkaCluster) and broker.secured is not None:
                    for name, value in secured_env(broker, settings).items():
                        print(f"secured {name}={value}")
                print("ready", flush=True)
                # until the runner closes it (or exits); "failed": the tests failed
                if "failed" in sys.stdin.read():
                    tail = worker.log().splitlines()[-20:]
                    print("--- the worker's last lines ---", *tail, sep="\n", file=sys.stderr)
            finally:
                assert worker.process is not None
                if worker.process.poll() is None:
                    worker.stop()  # before the broker it talks to
    finally:
        shutil.rmtree(settings.data_dir if "settings" in locals() else scratch, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
