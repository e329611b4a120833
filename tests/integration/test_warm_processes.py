"""The warm fork of ``loopwarden`` commands the tests use (tests/support/warm_processes.py)
behaves as ``python -m loopwarden`` does: its environment exactly, its exit code, its
streams apart, a worker that stops on SIGTERM with 0."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

import pytest
from warm_processes import run_warm, start_warm_worker

from loopwarden.settings import settings_env

from .conftest import create_topics, isolated_settings

pytestmark = pytest.mark.integration
SPIN = '{"loop_id": "l1", "action_type": "search"}\n' * 4


def cold(args: list[str], env: dict[str, str], input: str | None = None):
    return subprocess.run(
        [sys.executable, "-m", "loopwarden", *args],
        env=env,
        input=input,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_command_reads_its_stdin_and_answers_as_a_cold_one(tmp_path):
    env = {**os.environ, "LOOPWARDEN_DATA_DIR": str(tmp_path)}
    warm = run_warm(["detect", "-", "--format", "json"], env, input=SPIN)
    expected = cold(["detect", "-", "--format", "json"], env, SPIN)
    assert warm.returncode == expected.returncode == 0, warm.stderr
    strip = lambda text: [line for line in text.splitlines() if '"warning_id"' not in line]  # noqa: E731
    assert len(warm.stdout.splitlines()) == len(expected.stdout.splitlines()) >= 1
    assert [line.split('"kind"')[1][:40] for line in strip(warm.stdout)] == [
        line.split('"kind"')[1][:40] for line in strip(expected.stdout)
    ]


def test_the_environment_given_is_the_whole_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("LOOPWARDEN_DETECTION__PROFILE", "bogus")  # in the test's own only
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LOOPWARDEN_DETECTION")}
    assert run_warm(["detect", "-"], clean, input=SPIN).returncode == 0
    refused = run_warm(["detect", "-"], dict(os.environ), input=SPIN)
    assert refused.returncode == 1 and refused.stdout == ""
    assert "detection.profile" in refused.stderr and "bogus" in refused.stderr


def test_a_usage_error_is_exit_2_on_stderr():
    done = run_warm(["detect", "--no-such-option"], dict(os.environ))
    assert done.returncode == 2 and "No such option" in done.stderr and done.stdout == ""


def test_a_warm_worker_starts_and_stops_on_sigterm_with_0(broker, tmp_path):
    settings = isolated_settings(broker, "warm", ["monitor"])
    create_topics(settings)
    log = tmp_path / "worker.log"
    worker = start_warm_worker({**os.environ, **settings_env(settings)}, str(log))
    with pytest.raises(subprocess.TimeoutExpired):
        worker.wait(0.5)  # it runs until told to stop
    deadline = time.monotonic() + 60
    while "worker ready" not in log.read_text():  # a stop before it is ready exits 143
        assert worker.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
        with contextlib.suppress(subprocess.TimeoutExpired):
            worker.wait(0.05)  # its end, else the next look at its log
    os.kill(worker.pid, 0)  # the pid is the worker's own, to be signalled
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(60) == 0, log.read_text()[-3000:]
    assert "worker started" in log.read_text()
