"""The adapters' examples run as written against a real worker (laddered profile).

Each example's scripted model keeps making one tool call; run against the worker it
must be warned and then stopped, and say so.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from loopwarden.settings import settings_env
from loopwarden.streams.broker import free_port

from .adapter_harness import laddered_settings

pytestmark = pytest.mark.integration
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def example_env(broker, tmp_path_factory):
    from .conftest import WorkerProcess, create_topics

    settings = laddered_settings(broker, "examples")
    api = settings.api.model_copy(update={"overrides_enabled": False})
    settings = settings.model_copy(update={"web_port": free_port(), "api": api})
    create_topics(settings)
    log = tmp_path_factory.mktemp("examples") / "worker.log"
    worker = WorkerProcess(settings, log).start()
    yield settings, {**os.environ, **settings_env(settings)}
    assert worker.stop() == 0, worker.log()[-3000:]


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
    settings, env = example_env
    url = f"http://127.0.0.1:{settings.web_port}/hooks/claude-code"
    out = run("claude_code_session.py", env, url)
    assert "context added:\n[loopwarden]" in out, out
    assert "denied — [loopwarden] This run was stopped" in out, out


def test_the_collector_config_sends_spans_where_the_otlp_role_reads():
    import yaml

    config = yaml.safe_load((EXAMPLES / "otel_collector.yaml").read_text())
    kafka = config["exporters"]["kafka"]
    assert kafka["topic"] == "otlp_spans" and kafka["encoding"] in ("otlp_proto", "otlp_json")
    assert "kafka" in config["service"]["pipelines"]["traces"]["exporters"]
    from loopwarden.settings import Settings

    assert Settings().topics.otlp_spans == kafka["topic"]
