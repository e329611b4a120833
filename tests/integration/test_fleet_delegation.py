"""Two LangGraph agents delegating to each other in a circle, end to end on the broker.

Each agent is ``create_agent`` with LangChain's fake chat model and the loopwarden
middleware; each calls the other as a tool with the same task, so every run starts
with a fresh step budget and no per-run guard ever fires. The worker's fleet role
sees the family: a delegation-cycle warning to every live loop, then a stop to
every loop of the family, and every run ends with the stop.
"""

from __future__ import annotations

import os
import threading
import uuid

import orjson
import pytest
from deferred import deferred
from warm_processes import run_warm

from loopwarden.schemas.tool_calls import STOP_HEADER
from loopwarden.settings import settings_env

from .adapter_harness import VERDICT_WAIT_S, delegation_cycle_warned_then_stopped, read_topic

lc_agents = deferred("langchain.agents")
fakes = deferred("langchain_fakes")
lc_messages = deferred("langchain_core.messages")
lc_tools = deferred("langchain_core.tools")
lc_adapter = deferred("loopwarden.adapters.langchain")

pytestmark = pytest.mark.integration

TASK = "Find the cheapest direct flight from Berlin to Lisbon on 12 December"


def delegation(tool_name: str, count: int) -> list[lc_messages.AIMessage]:
    return [
        lc_messages.AIMessage(
            "", tool_calls=[{"name": tool_name, "args": {"task": TASK}, "id": f"{tool_name}-{n}"}]
        )
        for n in range(count)
    ]


def test_a_two_agent_delegation_cycle_is_warned_then_every_loop_is_stopped(laddered, monkeypatch):
    settings, guard = laddered
    root = f"planner-{uuid.uuid4().hex[:8]}"
    calls = {"ask_researcher": 0, "ask_planner": 0}
    lock = threading.Lock()

    # the root says its task at its first model call, before it delegates: the 3rd
    # planner run is the first finding (warns everyone), the 3rd researcher run the
    # second (the stop). From the researcher's 2nd answer on, each run's first model call
    # waits for the verdict on its start (generously: each comes), so the 3rd researcher
    # run is stopped before its first model call
    monkeypatch.setattr(guard, "verdict_wait_s", 0.0)
    planner_model = fakes.ScriptedChatModel(messages=iter(delegation("ask_researcher", 10)))

    def pace(k: int) -> None:
        if k == 1:
            guard.verdict_wait_s = VERDICT_WAIT_S

    researcher_model = fakes.ScriptedChatModel(
        messages=iter(delegation("ask_planner", 10)), pace=pace
    )

    @lc_tools.tool
    def ask_researcher(task: str) -> str:
        """Hand a task to the researcher agent."""
        with lock:
            calls["ask_researcher"] += 1
        out = researcher.invoke({"messages": [{"role": "user", "content": task}]})
        return str(out["messages"][-1].content)

    @lc_tools.tool
    def ask_planner(task: str) -> str:
        """Hand a task back to the planner agent."""
        with lock:
            calls["ask_planner"] += 1
        out = planner.invoke({"messages": [{"role": "user", "content": task}]})
        return str(out["messages"][-1].content)

    planner = lc_agents.create_agent(
        planner_model,
        [ask_researcher],
        middleware=[lc_adapter.LoopwardenMiddleware(guard, agent="planner")],
    )
    researcher = lc_agents.create_agent(
        researcher_model,
        [ask_planner],
        middleware=[lc_adapter.LoopwardenMiddleware(guard, agent="researcher")],
    )

    result = planner.invoke(
        {"messages": [{"role": "user", "content": TASK}]},
        {"configurable": {"thread_id": root}, "recursion_limit": 100},
    )

    # every run of the circle ended with the stop, the root's last
    final = result["messages"][-1]
    assert isinstance(final, lc_messages.AIMessage) and final.content.startswith(STOP_HEADER)
    # planner ×3 (the root and 2 delegated runs), researcher ×3: the 3rd researcher run
    # stopped before its first model call
    assert calls == {"ask_researcher": 3, "ask_planner": 2}
    assert len(researcher_model.requests) == 2 and len(planner_model.requests) == 3

    # the family travels on its root's partition in the order it was published: the 3rd
    # planner run is the first finding (the root, planner ×2 and researcher ×2 are
    # warned), the 3rd researcher run the second (all six are stopped)
    warned, stopped = delegation_cycle_warned_then_stopped(settings, root, "planner", 6)
    assert root in warned.loop_ids and len(warned.loop_ids) == 5

    # each loop's own warnings: warned then stopped, or stopped (the 3rd researcher run)
    # (the family's loops: the root and the 5 runs it delegated, as published; the worker
    # is shared with other tests' families)
    delegated = read_topic(
        settings,
        settings.topics.actions,
        lambda e: e.get("payload", {}).get("root_loop_id") == root,
        5,
    )
    family = {root} | {e["loop_id"] for e in delegated}
    expected = len(warned.loop_ids) + len(stopped.loop_ids)
    told = read_topic(
        settings,
        settings.topics.warnings,
        lambda w: w.get("kind") == "delegation_cycle" and w["loop_id"] in family,
        expected,
    )
    steps: dict[str, list[str]] = {}
    for warning in told:
        steps.setdefault(warning["loop_id"], []).append(warning["step"])
    assert len(told) == expected and len(steps) == 6
    assert {loop for loop, s in steps.items() if s == ["warn", "stop"]} == set(warned.loop_ids)
    assert all(s == ["stop"] for loop, s in steps.items() if loop not in warned.loop_ids)
    assert all(w["next_actions"] == ["stop"] for w in told if w["step"] == "stop")

    # what an operator follows: `loopwarden tail --fleet`
    args = ["tail", "--fleet", "--loop", root, "--from-beginning", "--limit", "2"]
    run = run_warm([*args, "--timeout", "60"], {**os.environ, **settings_env(settings)}, timeout=90)
    assert run.returncode == 0, run.stderr
    headers = [line for line in run.stdout.splitlines() if line.startswith("[fleet")]
    assert headers == [
        f"[fleet {root}] delegation_cycle (warn): {warned.reason}",
        f"[fleet {root}] delegation_cycle (stop): {stopped.reason}",
    ]

    # an audit reproduces the family's decisions from the actions topic alone: the
    # family's events travel on the root's partition, in the order the worker read them
    args = ["replay", "--json", "--no-progress", "--loop", root]
    audit = run_warm(args, {**os.environ, **settings_env(settings)}, timeout=120)
    assert audit.returncode == 0, audit.stderr[-3000:]
    totals = orjson.loads(audit.stdout)["totals"]
    assert totals["missing"] == totals["unexpected"] == totals["changed"] == 0, totals
    assert totals["matched"] >= 4  # the two fleet warnings and the root's warn and stop
