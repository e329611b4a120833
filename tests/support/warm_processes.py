"""``loopwarden`` commands for tests, forked from a warm interpreter instead of started cold.

A worker a test starts cost 6.3–6.6 s of CPU to be ready, most of it importing
(lancedb alone 2.5 s, faust, the capabilities), a ``loopwarden replay`` about 3 s:
the suite starts about fifty workers and as many commands (``benchmarks/suite_cost.py``).
The standard library's fork server (``multiprocessing``'s ``forkserver`` start method,
made for this) keeps one process per test process that has imported those modules,
and forks each command from it. The child is set up as
:func:`~loopwarden.cli.runtime.start_worker_process` sets up a ``python -m loopwarden``
child: exactly the environment given, a session of its own, its standard streams
redirected, ``SIGTERM`` when its parent (the fork server, which ends with the test
process) dies — and runs the same command-line entry point with the same arguments,
so the command's own code from ``main`` on is what a user runs, and its exit code is
the command's. Python's exit steps run as at interpreter exit (non-daemon threads
joined, ``atexit`` handlers).

- :func:`start_warm_worker`: a ``loopwarden worker`` behind the part of
  :class:`subprocess.Popen` the tests use;
- :func:`run_warm`: ``subprocess.run([python, -m, loopwarden, *args], capture_output=True,
  text=True)`` alike, returning a :class:`subprocess.CompletedProcess`.

What a cold start alone would show (a module that fails to import in a fresh process,
an environment variable read at import time) stays covered by the commands started
cold: the fault suite's workers, ``loopwarden dev`` and the demo, the CLI tests, the
docs' blocks, one replay of the whole recording, ``WorkerProcess(..., cold=True)`` (the
restart tests).
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
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

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


def _run_command(
    args: Sequence[str],
    env: Mapping[str, str],
    cwd: str | None,
    stdin_path: str | None,
    stdout_path: str | None,
    stderr_path: str | None,
) -> None:
    """In the forked child: become ``python -m loopwarden *args`` and run it (stdin from
    ``stdin_path`` or /dev/null, stdout to ``stdout_path`` or /dev/null, stderr to
    ``stderr_path``, the stdout file when it is the same path, or inherited)."""
    os.environ.clear()
    os.environ.update(env)
    if cwd is not None:
        os.chdir(cwd)
    os.setsid()
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM))
    os.dup2(os.open(stdin_path or os.devnull, os.O_RDONLY), 0)
    # multiprocessing gave the child a sys.stdin of its own on /dev/null: read fd 0 again
    sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the process's stdin, kept open
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
    out = os.open(stdout_path or os.devnull, flags, 0o644)
    os.dup2(out, 1)
    if stderr_path is not None:
        os.dup2(out if stderr_path == stdout_path else os.open(stderr_path, flags, 0o644), 2)
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(number, signal.SIG_DFL)
    sys.argv = ["loopwarden", *args]
    from loopwarden.cli import main

    try:
        main(args=list(args), prog_name="loopwarden")
    finally:
        atexit._run_exitfuncs()
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()


class WarmWorker:
    """A forked worker behind the part of :class:`subprocess.Popen` the tests use
    (``pid``, ``poll``, ``wait``, ``send_signal``, ``kill``, ``returncode``)."""

    def __init__(self, env: Mapping[str, str], log_path: str | None) -> None:
        self.args = ["worker"]
        self._process = _context.Process(
            target=_run_command,
            args=(self.args, dict(env), None, None, log_path, log_path),
            name="loopwarden-worker",
        )
        self._process.start()
        self.pid: int = self._process.pid or 0

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


def run_warm(
    args: Sequence[str],
    env: Mapping[str, str],
    *,
    input: str | bytes | None = None,
    cwd: str | Path | None = None,
    timeout: float = 120.0,
) -> subprocess.CompletedProcess[str]:
    """``python -m loopwarden *args`` forked warm, its output captured as text; killed
    (and ``subprocess.TimeoutExpired`` raised) after ``timeout`` seconds."""
    with tempfile.TemporaryDirectory(prefix="lw-warm-") as folder:
        stdin_path = stdout_path = Path(folder) / "stdout"
        stderr_path = Path(folder) / "stderr"
        if input is not None:
            stdin_path = Path(folder) / "stdin"
            stdin_path.write_bytes(input.encode() if isinstance(input, str) else input)
        process = _context.Process(
            target=_run_command,
            args=(
                list(args),
                dict(env),
                None if cwd is None else str(cwd),
                None if input is None else str(stdin_path),
                str(stdout_path),
                str(stderr_path),
            ),
            name="loopwarden-command",
        )
        process.start()
        process.join(timeout)
        if process.exitcode is None:
            process.kill()
            process.join(10)
            raise subprocess.TimeoutExpired(["loopwarden", *args], timeout)
        read = lambda path: path.read_text(errors="replace") if path.exists() else ""  # noqa: E731
        return subprocess.CompletedProcess(
            ["loopwarden", *args], process.exitcode, read(stdout_path), read(stderr_path)
        )
