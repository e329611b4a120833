"""Claude Code's HTTP hooks against a real worker: observe, warn in context, deny after stop.

The requests are the hook inputs Claude Code POSTs (session id, tool name, input,
response, tool_use_id). Between calls the test polls the session's status until the
worker's verdict is there — the latency of a real model call, made deterministic.
"""

from __future__ import annotations

import asyncio
import uuid

import aiohttp
import pytest
from pydantic import SecretStr

from loopwarden.agents.hooks.claude_code import settings_snippet
from loopwarden.schemas.tool_calls import CONTEXT_HEADER, STOP_HEADER
from loopwarden.streams.tools.broker import free_port

from .adapter_harness import (
    STOP_AT,
    WARN_AT,
    laddered_settings,
    neighbour_loop,
    published_events,
)
from .conftest import WorkerProcess, create_topics, http_call

pytestmark = pytest.mark.integration
TOKEN = "hook-token"


@pytest.fixture(scope="module")
def hooks_worker(broker, tmp_path_factory):
    """One worker for the module's tests (each uses sessions of its own)."""
    port = free_port()
    settings = laddered_settings(broker, "hooks")
    api = settings.api.model_copy(update={"token": SecretStr(TOKEN)})
    settings = settings.model_copy(update={"web_port": port, "api": api})
    create_topics(settings)
    worker = WorkerProcess(settings, tmp_path_factory.mktemp("hooks") / "worker.log").start()
    yield settings, f"http://127.0.0.1:{port}/hooks/claude-code"
    worker.stop()


def bash(session: str, n: int, command: str = "pytest -x", stdout: str = "1 failed") -> dict:
    return {
        "session_id": session,
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/repo",
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_response": {"stdout": stdout, "stderr": "", "interrupted": False},
        "tool_use_id": f"toolu_{n}",
    }


async def in_thread(function, *args):
    return await asyncio.get_running_loop().run_in_executor(None, function, *args)


async def until(session, url: str, ready, timeout_s: float = 60.0) -> dict:
    """Poll the session's status until ``ready(status)``."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        status, body, _ = await http_call(session, "GET", url, token=TOKEN)
        assert status == 200, body
        if ready(body):
            return body
        assert asyncio.get_running_loop().time() < deadline, body
        await asyncio.sleep(0.05)


async def test_a_spinning_session_is_warned_then_its_tools_are_denied(hooks_worker):
    settings, url = hooks_worker
    sid = f"cc-{uuid.uuid4().hex[:8]}"
    status_url = f"{url}/sessions/{sid}"
    async with aiohttp.ClientSession() as http:
        await until(http, status_url, lambda s: s["following"])
        answers = []
        for n in range(WARN_AT):
            status, body, _ = await http_call(http, "POST", url, json=bash(sid, n), token=TOKEN)
            assert status == 200, body
            answers.append(body)
        assert answers == [{}] * WARN_AT
        await until(http, status_url, lambda s: s["pending"] >= 1)

        status, body, _ = await http_call(http, "POST", url, json=bash(sid, WARN_AT), token=TOKEN)
        context = body["hookSpecificOutput"]["additionalContext"]
        assert body["hookSpecificOutput"]["hookEventName"] == "PostToolUse"
        assert context.startswith(CONTEXT_HEADER) and "Bash" in context

        pre = {**bash(sid, 99), "hook_event_name": "PreToolUse"}
        del pre["tool_response"]
        status, body, _ = await http_call(http, "POST", url, json=pre, token=TOKEN)
        assert (status, body) == (200, {}), "denied before any stop"

        for n in range(WARN_AT + 1, STOP_AT):  # the STOP_AT-th identical call is the stop
            await http_call(http, "POST", url, json=bash(sid, n), token=TOKEN)
        await until(http, status_url, lambda s: s["stop"] is not None)
        status, body, _ = await http_call(http, "POST", url, json=pre, token=TOKEN)
        decision = body["hookSpecificOutput"]
        assert decision["permissionDecision"] == "deny"
        assert decision["permissionDecisionReason"].startswith(STOP_HEADER)

        end = {"session_id": sid, "hook_event_name": "Stop", "stop_hook_active": False}
        status, body, _ = await http_call(http, "POST", url, json=end, token=TOKEN)
        assert (status, body) == (200, {})
    payloads = [e["payload"] for e in await in_thread(published_events, settings, sid, STOP_AT + 1)]
    assert payloads[0]["action_type"] == "Bash" and payloads[0]["params"] == {
        "command": "pytest -x"
    }
    assert payloads[0]["tool_call_id"] == "toolu_0" and payloads[0]["result"] == "1 failed"
    assert payloads[-1]["action_type"] == "loop_end" and payloads[-1]["terminated"] is True


async def test_a_healthy_session_gets_nothing_and_failures_count(hooks_worker):
    settings, url = hooks_worker
    sid = f"cc-ok-{uuid.uuid4().hex[:8]}"
    async with aiohttp.ClientSession() as http:
        await until(http, f"{url}/sessions/{sid}", lambda s: s["following"])
        for n, command in enumerate(["ls", "cat a.py", "pytest", "git diff"]):
            status, body, _ = await http_call(
                http, "POST", url, json=bash(sid, n, command, f"out {n}"), token=TOKEN
            )
            assert (status, body) == (200, {})
        failure = {
            **bash(sid, 9, "make"),
            "hook_event_name": "PostToolUseFailure",
            "error": "exit 2",
        }
        status, body, _ = await http_call(http, "POST", url, json=failure, token=TOKEN)
        assert (status, body) == (200, {})
        prompt = {"session_id": sid, "hook_event_name": "UserPromptSubmit", "prompt": "go on"}
        status, body, _ = await http_call(http, "POST", url, json=prompt, token=TOKEN)
        assert (status, body) == (200, {})  # nothing pending, and not an action
        # a spin on a neighbour session (same partitions): its warning comes after any of ours
        other = neighbour_loop(sid, settings.topics.partitions)
        for n in range(WARN_AT):
            await http_call(http, "POST", url, json=bash(other, n), token=TOKEN)
        await until(http, f"{url}/sessions/{other}", lambda s: s["warnings_seen"] >= 1)
        mine = await until(http, f"{url}/sessions/{sid}", lambda s: True)
        assert mine["warnings_seen"] == 0
    failed = (await in_thread(published_events, settings, sid, 5))[-1]["payload"]
    assert failed["success"] is False and failed["error_message"] == "exit 2"


TASK = "Find every caller of ledger.reconcile and list them"


def in_subagent(hook: dict, agent: int) -> dict:
    return {**hook, "agent_id": f"a{agent:03d}", "agent_type": "Explore"}


async def test_a_session_handing_one_task_to_sub_agents_again_and_again_is_stopped(hooks_worker):
    """Claude Code sub-agents are loops of the session's family: the same sub-agent
    given the same task a 3rd time is a delegation cycle (a warning), a 4th time the
    family's stop, and the sub-agent is refused its tools."""
    settings, url = hooks_worker
    sid = f"cc-fam-{uuid.uuid4().hex[:8]}"
    status_url = f"{url}/sessions/{sid}"

    async def post(http, hook: dict) -> dict:
        status, body, _ = await http_call(http, "POST", url, json=hook, token=TOKEN)
        assert status == 200, body
        return body

    async with aiohttp.ClientSession() as http:
        await until(http, status_url, lambda s: s["following"])
        await post(http, bash(sid, 0, "git status", "clean"))  # the session's own step
        for k in range(4):
            start = {"session_id": sid, "hook_event_name": "SubagentStart", "prompt": TASK}
            await post(http, in_subagent(start, k))
            await post(http, in_subagent(bash(sid, 10 + k, f"grep -rn reconcile src/{k}"), k))
            if k == 2:  # the 3rd time: the whole family is warned
                await until(http, status_url, lambda s: s["warnings_seen"] >= 1)
            if k == 3:  # the 4th: stopped, the sub-agent with it
                await until(http, status_url, lambda s: s["stop"] is not None)
                pre = in_subagent({**bash(sid, 99), "hook_event_name": "PreToolUse"}, k)
                decision = (await post(http, pre))["hookSpecificOutput"]
                assert decision["permissionDecision"] == "deny"
                assert "given the same task" in decision["permissionDecisionReason"]
            stop = {"session_id": sid, "hook_event_name": "SubagentStop"}
            await post(http, in_subagent(stop, k))
    first = await in_thread(published_events, settings, f"{sid}/a000", 3)
    assert [e["payload"]["action_type"] for e in first] == [
        "delegated_run_start",
        "Bash",
        "loop_end",
    ]
    start = first[0]["payload"]
    assert (start["task"], start["agent"], start["turn"]) == (TASK, "Explore", "message")
    assert all(
        (e["payload"]["parent_loop_id"], e["payload"]["root_loop_id"]) == (sid, sid) for e in first
    )


async def test_bad_requests_get_clear_errors(hooks_worker):
    _, url = hooks_worker
    async with aiohttp.ClientSession() as http:
        status, body, _ = await http_call(http, "POST", url, json=bash("s", 1))
        assert status == 401 and "Bearer" in body["message"]
        status, body, _ = await http_call(http, "POST", url, json={"tool_name": "x"}, token=TOKEN)
        assert status == 422 and body["errors"][0]["path"] == "session_id"
        status, body, _ = await http_call(http, "POST", url, data=b"[1]", token=TOKEN)
        assert status == 400


def test_the_settings_snippet_points_every_hook_at_the_endpoint():
    snippet = settings_snippet("http://127.0.0.1:6066/hooks/claude-code")
    hooks = snippet["hooks"]
    assert set(hooks) == {
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "UserPromptSubmit",
        "Stop",
        "SubagentStart",
        "SubagentStop",
    }
    for entries in hooks.values():
        (entry,) = entries
        assert entry["hooks"] == [
            {"type": "http", "url": "http://127.0.0.1:6066/hooks/claude-code", "timeout": 5}
        ]
