"""The command line's edges (issue 32, item 7): one line for a wrong setting, like
errors with like exit codes, a busy port said before anything starts."""

from __future__ import annotations

import socket
import sys

import pytest
from click.testing import CliRunner

from loopwarden.cli import main
from loopwarden.cli.exits import Exit


def run(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(main, list(args), env=env)


def test_a_wrong_setting_is_one_line_naming_its_variable():
    result = run("detect", "-", env={"LOOPWARDEN_DETECTION__SPIN_THRESHOLD": "abc"})
    assert result.exit_code == Exit.ERROR
    assert result.stderr.strip().splitlines() == [
        "Error: setting detection.spin_threshold [LOOPWARDEN_DETECTION__SPIN_THRESHOLD]: "
        "Input should be a valid integer, unable to parse string as an integer (got 'abc')"
    ]


def test_an_otlp_endpoint_that_is_not_a_url_is_refused_at_start():
    result = run("detect", "-", env={"LOOPWARDEN_TELEMETRY__OTLP_ENDPOINT": "notaurl"})
    assert result.exit_code == Exit.ERROR
    assert "telemetry.otlp_endpoint" in result.stderr and "http(s) URL" in result.stderr


def test_replay_arguments_are_checked_before_the_audit_code_loads(monkeypatch):
    monkeypatch.setitem(sys.modules, "loopwarden.agents.audit.driver", None)  # importing it fails
    bad_time = run("replay", "--since", "yesterday")
    assert bad_time.exit_code == Exit.USAGE and "'yesterday'" in bad_time.stderr
    bad_setting = run("replay", "--since", "2h", "--set", "nope.x=1")
    assert bad_setting.exit_code == Exit.USAGE  # like a bad --since: a bad argument
    assert "unknown setting 'nope.x'" in bad_setting.stderr


def test_an_unknown_experience_is_an_error_like_an_unknown_memory(tmp_path):
    env = {"LOOPWARDEN_MEMORY__URI": str(tmp_path / "memory"), "LOOPWARDEN_DATA_DIR": str(tmp_path)}
    experience = run("experience", "show", "nope", env=env)
    memory = run("memory", "show", "nope", env=env)
    assert experience.exit_code == memory.exit_code == Exit.ERROR
    assert "no experience with id 'nope'" in experience.stderr


@pytest.fixture
def busy_port():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield taken.getsockname()[1]


def test_a_busy_web_port_is_one_line_before_the_worker_starts(busy_port):
    result = run("worker", "--web-port", str(busy_port))
    assert result.exit_code == Exit.ERROR
    assert result.stderr.strip() == (
        f"Error: port {busy_port} (--web-port / LOOPWARDEN_WEB_PORT) is not free: "
        "Address already in use; pick another port"
    )


def test_dev_reads_the_web_port_from_the_environment(busy_port):
    result = run("dev", env={"LOOPWARDEN_WEB_PORT": str(busy_port)})
    assert result.exit_code == Exit.ERROR  # refused before the broker started
    assert f"port {busy_port}" in result.stderr and "broker on" not in result.output


def test_ctrl_c_is_130_for_tail_as_for_every_command(monkeypatch):
    import loopwarden.cli.io as io

    def interrupted(coroutine):
        coroutine.close()
        raise KeyboardInterrupt

    monkeypatch.setattr(io.asyncio, "run", interrupted)
    assert run("tail", "--timeout", "1").exit_code == Exit.INTERRUPTED
