"""The adapters' examples run as written against ``loopwarden dev`` (laddered profile).

Each example's scripted model keeps making one tool call; run against the worker it
must be warned and then stopped, and say so.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from loopwarden.cli.runtime import stop_process
from loopwarden.streams.tools.broker import free_port

pytestmark = pytest.mark.integration
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def example_env(tmp_path_factory):
    """``loopwarden dev`` as a user starts it (its own embedded broker and worker), with
    the laddered profile; the examples get the line it prints."""
    home = tmp_path_factory.mktemp("dev")
    web_port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("LOOPWARDEN_")},
        "LOOPWARDEN_DETECTION__PROFILE": "patterns",
        "LOOPWARDEN_DATA_DIR": str(home / "data"),
        "LOOPWARDEN_MEMORY__URI": str(home / "memory"),
    }
    dev = subprocess.Popen(
        [sys.executable, "-m", "loopwarden", "dev", "--web-port", str(web_port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=open(home / "dev.log", "wb"),  # noqa: SIM115
        text=True,
        start_new_session=True,
    )
    try:
        exported = next(line for line in dev.stdout if line.startswith("export "))
        name, value = exported.split()[1].split("=", 1)
        env[name] = value.strip()
        wait_until_ready(f"http://127.0.0.1:{web_port}/ready", dev)
        yield web_port, env
    finally:
        code = stop_process(dev)
    assert code == 0, (home / "dev.log").read_text()[-3000:]


def wait_until_ready(url: str, dev: subprocess.Popen, timeout_s: float = 90.0) -> None:
    """Poll the worker's /ready (joined its group, tables recovered, topics made)."""
    deadline = time.monotonic() + timeout_s
    while True:
        assert dev.poll() is None, "loopwarden dev exited"
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        assert time.monotonic() < deadline, "the dev worker never became ready"
        time.sleep(0.2)


def run(script: str, env: dict, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, f"{script}:\n{done.stdout}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.mark.parametrize(
    "script", ["langchain_agent.py", "pydantic_ai_agent.py", "openai_agents_agent.py"]
)
def test_a_framework_example_is_warned_then_stopped(example_env, script):
    _, env = example_env
    out = run(script, env)
    summary = next(line for line in out.splitlines() if line.startswith("loop "))
    warned = int(summary.split(", ")[1].split()[0])
    assert warned >= 1, out
    assert "stopped: [loopwarden] This run was stopped" in out, out


def test_the_claude_code_example_is_warned_then_denied(example_env):
    web_port, env = example_env
    url = f"http://127.0.0.1:{web_port}/hooks/claude-code"
    out = run("claude_code_session.py", env, url)
    assert "context added:\n[loopwarden]" in out, out
    assert "denied — [loopwarden] This run was stopped" in out, out
    assert "stdout" not in out, out  # the repeated result quoted as the tool said it


def test_the_collector_config_sends_spans_where_the_otlp_role_reads():
    import yaml

    config = yaml.safe_load((EXAMPLES / "otel_collector.yaml").read_text())
    kafka = config["exporters"]["kafka"]
    assert kafka["topic"] == "otlp_spans" and kafka["encoding"] in ("otlp_proto", "otlp_json")
    assert "kafka" in config["service"]["pipelines"]["traces"]["exporters"]
    from loopwarden.settings import Settings

    assert Settings().topics.otlp_spans == kafka["topic"]
