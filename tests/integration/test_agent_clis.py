"""Real agent CLIs through ``loopwarden gateway`` (``make test-gateway-clis``: Node and
npm; the CLIs installed from npm into ``~/.cache/loopwarden/agent-clis``, their bin
folder in ``LOOPWARDEN_AGENT_CLIS``), each pointed at the gateway by its documented
base-URL setting, the gateway at the tests' scripted model, which asks again and again
for the same failing ``pytest``.

- Claude Code (print mode, ``ANTHROPIC_BASE_URL``) loops, reads the warning, and is
  stopped with the warning's words: the gateway answered its last request.
- Codex CLI (``codex exec``, a model provider whose ``base_url`` is the gateway's
  ``/v1``, the Responses API) loops and every step is watched as one loop. It is not
  stopped: each result of its ``exec_command`` starts with a random chunk id and the
  wall time, so neither the same-result rule nor the gate sees the same outcome twice —
  a detection gap (the closing note of issue 70), not the gateway's.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import orjson
import pytest
from gateway_process import GatewayProcess
from scripted_model import COMMAND, ScriptedModel

from loopwarden.schemas.tool_calls import CONTEXT_HEADER, STOP_HEADER
from loopwarden.streams.tools.replay_reader import TopicRangeReader

pytestmark = [pytest.mark.integration, pytest.mark.agent_clis]

CODEX_CONFIG = """model = "gpt-5-codex"
model_provider = "loopwarden"

[model_providers.loopwarden]
name = "loopwarden gateway"
base_url = "{url}/v1"
env_key = "OPENAI_API_KEY"
wire_api = "responses"
"""


def cli(name: str) -> str:
    folder = os.environ.get("LOOPWARDEN_AGENT_CLIS")
    assert folder, "LOOPWARDEN_AGENT_CLIS names the CLIs' bin folder: run make test-gateway-clis"
    path = Path(folder) / name
    assert path.exists(), f"{path} is not installed: run make test-gateway-clis"
    return str(path)


def project(tmp_path: Path) -> Path:
    """A project whose login test fails, and a home of the CLI's own."""
    (tmp_path / "proj" / "tests").mkdir(parents=True)
    (tmp_path / "proj" / "tests" / "test_login.py").write_text(
        'def test_login():\n    assert 500 == 200, "expected 200, got 500"\n'
    )
    (tmp_path / "home").mkdir()
    return tmp_path / "proj"


def run(
    args: list[str], cwd: Path, env: dict[str, str], timeout_s: float
) -> tuple[int | None, str]:
    """Run a CLI in a process group of its own; on timeout the group is stopped by its
    pid (None: it was still running)."""
    process = subprocess.Popen(
        args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        out, _ = process.communicate(timeout=timeout_s)
        return process.returncode, out.decode(errors="replace")
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGTERM)
        out, _ = process.communicate(timeout=30)
        return None, out.decode(errors="replace")


@pytest.fixture(scope="module")
def stack(laddered, tmp_path_factory):
    settings, _ = laddered
    adapters = settings.adapters.model_copy(update={"verdict_wait_ms": 10_000})
    settings = settings.model_copy(update={"adapters": adapters})
    log = str(tmp_path_factory.mktemp("gateway") / "gateway.log")
    with ScriptedModel() as model:
        gateway = GatewayProcess(settings, model.url, log)
        try:
            gateway.wait_ready(broker=True)
            yield settings, model, gateway
        finally:
            gateway.stop()


def base_env(tmp_path: Path) -> dict[str, str]:
    venv_bin = str(Path(sys.executable).parent)
    return {"PATH": f"{venv_bin}:{os.environ['PATH']}", "HOME": str(tmp_path / "home"),
            "LANG": "C.UTF-8"}  # fmt: skip


def test_claude_code_loops_reads_the_warning_and_is_stopped_with_its_words(stack, tmp_path):
    _, model, gateway = stack
    cwd = project(tmp_path)
    before = len(model.seen)
    env = {
        **base_env(tmp_path),
        "ANTHROPIC_BASE_URL": gateway.url,
        "ANTHROPIC_API_KEY": "sk-ant-test-claude-code",
        "IS_SANDBOX": "1",  # tests run as root here; permissions are skipped in a sandbox
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    args = [cli("claude"), "-p", "Fix the failing login tests", "--dangerously-skip-permissions"]
    code, out = run(args, cwd, env, 240)
    assert code == 0, out[-3000:]
    assert out.startswith(STOP_HEADER), out[:3000]
    seen = [s for s in model.seen[before:] if s.api == "messages"]
    ran = [s for s in seen if COMMAND in orjson.dumps(s.body).decode()]
    assert ran, "Claude Code ran the command the model asked for"
    assert any(CONTEXT_HEADER in s.instructions for s in seen), "the warning reached the model"
    assert gateway.status()["counts"]["stopped"] >= 1


async def loop_events(settings, prefix: str) -> Counter[tuple[str, str]]:
    """(loop id, action type) of the gateway's loops' events on the actions topic."""
    found: Counter[tuple[str, str]] = Counter()
    async with TopicRangeReader(settings.kafka.bootstrap_servers) as reader:
        async for batch in reader.read(await reader.whole(settings.topics.actions)):
            for record in batch:
                value = orjson.loads(record.value)
                for event in value if isinstance(value, list) else [value]:
                    if event["loop_id"].startswith(prefix):
                        action = (event.get("payload") or {}).get("action_type", "")
                        found[(event["loop_id"], action)] += 1
    return found


def test_codex_cli_loops_and_every_step_is_watched_as_one_loop(stack, tmp_path):
    settings, model, gateway = stack
    cwd = project(tmp_path)
    codex_home = tmp_path / "home" / ".codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(CODEX_CONFIG.format(url=gateway.url))
    env = {**base_env(tmp_path), "CODEX_HOME": str(codex_home),
           "OPENAI_API_KEY": "sk-test-codex-cli"}  # fmt: skip
    before = len(model.seen)
    unsandboxed = "--dangerously-bypass-approvals-and-sandbox"
    args = [cli("codex"), "exec", "--skip-git-repo-check", unsandboxed, "Fix the login tests"]
    _, out = run(args, cwd, env, 60)  # it loops until stopped by its pid
    seen = [s for s in model.seen[before:] if s.api == "responses"]
    assert len(seen) >= 10, f"Codex kept asking the model ({len(seen)} requests): {out[-2000:]}"
    events = asyncio.run(loop_events(settings, "gw-"))
    calls = {loop: n for (loop, action), n in events.items() if action == "exec_command"}
    assert len(calls) == 1, f"one loop for the run, not {sorted(calls)}"
    assert next(iter(calls.values())) >= len(seen) - 2, (calls, len(seen))
