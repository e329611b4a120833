"""``loopwarden worker`` for tests, forked from a warm interpreter instead of started cold.

A worker a test starts costs 2.5–13 s of CPU, most of it importing (lancedb alone 2.5 s,
faust, the capabilities): the suite starts about fifty (``benchmarks/suite_cost.py``).
The standard library's fork server (``multiprocessing``'s ``forkserver`` start method,
made for this) keeps one process per test process that has imported those modules,
and forks each worker from it. The child is then set up as
:func:`~loopwarden.cli.runtime.start_worker_process` sets up a ``python -m loopwarden
worker``: exactly the settings' environment, a session of its own, stdin from
``/dev/null``, stdout and stderr to the log, ``SIGTERM`` when its parent (the fork
server, which ends with the test process) dies — and runs the same command-line entry
point, so the worker's own code from ``main`` on is what a user runs; its exit code is
the command's. Python's exit steps run as at interpreter exit (non-daemon threads
joined, ``atexit`` handlers).

What a cold start alone would show (a module that fails to import in a fresh process,
an environment variable read at import time) stays covered by the workers started
cold: the fault suite's, ``loopwarden dev``'s and the demo's, and any
``WorkerProcess(..., cold=True)`` (the restart tests).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import ctypes.util
import multiprocessing
import os
import signal
import subprocess
import sys
from collections.abc import Mapping

PRELOADED = (
    "loopwarden.cli",
    "loopwarden.cli.runtime",
    "loopwarden.worker",
    "loopwarden.agents.memory.agent",
    "loopwarden.agents.experience.agent",
    "loopwarden.agents.analyst.agent",
)
"""What the fork server imports once: the worker's command and every capability's
modules (lancedb through memory and experience)."""

PR_SET_PDEATHSIG = 1
_context = multiprocessing.get_context("forkserver")
_context.set_forkserver_preload(list(PRELOADED))


def _run_worker(env: Mapping[str, str], log_path: str | None) -> None:
    """In the forked child: become a ``python -m loopwarden worker`` and run it."""
    os.environ.clear()
    os.environ.update(env)
    os.setsid()
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM))
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    if log_path is not None:
        log = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
    else:
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(number, signal.SIG_DFL)
    sys.argv = ["loopwarden", "worker"]
    from loopwarden.cli import main

    try:
        main(prog_name="loopwarden")
    finally:
        atexit._run_exitfuncs()
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()


class WarmWorker:
    """A forked worker behind the part of :class:`subprocess.Popen` the tests use
    (``pid``, ``poll``, ``wait``, ``send_signal``, ``kill``, ``returncode``)."""

    def __init__(self, env: Mapping[str, str], log_path: str | None) -> None:
        self._process = _context.Process(
            target=_run_worker, args=(dict(env), log_path), name="loopwarden-worker"
        )
        self._process.start()
        self.pid: int = self._process.pid or 0
        self.args = ["loopwarden", "worker"]

    @property
    def returncode(self) -> int | None:
        """The exit code (negative: the signal that ended it), None while it runs."""
        return self._process.exitcode

    def poll(self) -> int | None:
        """The exit code if it has ended, else None."""
        return self._process.exitcode

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the end; ``subprocess.TimeoutExpired`` after ``timeout`` seconds."""
        self._process.join(timeout)
        code = self._process.exitcode
        if code is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        return code

    def send_signal(self, number: int) -> None:
        """Signal the worker (by the pid this object started)."""
        if self._process.exitcode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, number)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def start_warm_worker(env: Mapping[str, str], log_path: str | None) -> WarmWorker:
    """A ``loopwarden worker`` with exactly the environment ``env``, forked warm."""
    return WarmWorker(env, log_path)
