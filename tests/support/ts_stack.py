"""The broker and the worker the TypeScript client's suite runs against, started the way
the Python suite's fixtures start them: :func:`new_test_broker` (the embedded Tansu, or
one Apache Kafka node with ``LOOPWARDEN_TEST_BROKER=kafka``), topics with names of their
own and a ``loopwarden worker`` process (``isolated_settings``, ``create_topics``,
``WorkerProcess`` of tests/integration/conftest.py), with the default detection profile a
reader gets.

Prints the worker's ``LOOPWARDEN_*`` settings, one ``NAME=value`` a line (the clients
read the same variables), then ``ready``; keeps both running until its standard input
closes or it is signalled, then stops the worker and the broker by the pids it started
(printing the worker's last log lines first when the input said ``failed``).
"""

from __future__ import annotations

import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "integration")]

from test_brokers import new_test_broker  # noqa: E402

from conftest import WorkerProcess, create_topics, isolated_settings  # noqa: E402
from loopwarden.settings import DetectionSettings, settings_env  # noqa: E402

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


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    scratch = Path(tempfile.mkdtemp(prefix="lw-ts-stack-"))
    try:
        with new_test_broker(scratch / "broker.log") as broker:
            settings = isolated_settings(broker, "typescript")
            settings = settings.model_copy(update={"detection": DetectionSettings()})
            create_topics(settings)
            worker = WorkerProcess(settings, scratch / "worker.log").start()
            try:
                wait_ready(worker)
                for name, value in sorted(settings_env(settings).items()):
                    print(f"{name}={value}")
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
