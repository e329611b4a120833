"""A tool is down when it fails far more than it usually does, learned from the stream;
and the fleet beside the monitor changes nothing where no tool is down."""

from __future__ import annotations

import math

import pytest

from loopwarden.agents.fleet.tool_health import MIN_BASELINE_CALLS, ToolHealth, binomial_tail
from loopwarden.evaluation.fleet_traffic import compare, random_failures, run_roles
from loopwarden.settings import Settings

SHARE, SIGNIFICANCE = 0.5, 1e-5


def calls(health: ToolHealth, pattern: str, loops: int = 4, tool: str = "t", lane: int = 0) -> None:
    """``pattern``: one character a call, ``x`` failed, ``.`` worked; loops take turns."""
    for n, mark in enumerate(pattern):
        health.count(tool, f"loop-{lane}-{n % loops}", mark == "x", lane)


def test_the_binomial_tail():
    assert binomial_tail(0, 20, 0.3) == 1.0
    assert binomial_tail(20, 20, 0.5) == pytest.approx(0.5**20)
    assert binomial_tail(1, 10, 0.1) == pytest.approx(1 - 0.9**10)
    exact = sum(math.comb(20, k) for k in range(15, 21)) / 2**20
    assert binomial_tail(15, 20, 0.5) == pytest.approx(exact)


def test_a_usually_working_tool_failing_for_most_recent_calls_is_down():
    health = ToolHealth()
    calls(health, ("." * 9 + "x") * 6)  # one call in ten fails: its usual rate
    assert not health.down("t", SHARE, SIGNIFICANCE)
    calls(health, "x" * 7)
    assert not health.down("t", SHARE, SIGNIFICANCE)  # 9 of the last 20: under half
    calls(health, "x" * 13)
    assert health.down("t", SHARE, SIGNIFICANCE)  # all 20


def test_a_tool_that_fails_routinely_is_not_down_at_its_usual_rate():
    health = ToolHealth()
    calls(health, "x.." * 100)  # fails a third of the time
    calls(health, "xx.x" * 5)  # three in four now: unusual, not an outage's certainty
    assert not health.down("t", SHARE, SIGNIFICANCE)
    calls(health, "x" * 18)
    assert health.down("t", SHARE, SIGNIFICANCE)


def test_a_tool_that_never_works_is_never_down():
    health = ToolHealth()
    calls(health, "x" * 200)
    assert health.usual_rate("t") > 0.99
    assert not health.down("t", SHARE, SIGNIFICANCE)


def test_no_usual_rate_without_enough_calls_from_two_loops():
    health = ToolHealth()
    calls(health, "." * (MIN_BASELINE_CALLS - 1) + "x" * 20)  # 19 behind the window
    assert health.usual_rate("t") is None and not health.down("t", SHARE, SIGNIFICANCE)
    one_loop = ToolHealth()
    calls(one_loop, "." * 100, loops=1)
    calls(one_loop, "x" * 20)
    assert one_loop.usual_rate("t") is None and not one_loop.down("t", SHARE, SIGNIFICANCE)


def test_recent_failures_of_one_loop_are_not_the_tools():
    health = ToolHealth()
    calls(health, "." * 60)
    calls(health, "x" * 20, loops=1)
    assert not health.down("t", SHARE, SIGNIFICANCE)


def test_the_usual_rate_follows_a_tool_that_changed_for_good():
    health = ToolHealth(baseline_calls=100)
    calls(health, "." * 100)
    calls(health, "x" * 30)
    assert health.down("t", SHARE, SIGNIFICANCE)
    calls(health, "x" * 1000)  # failing for good: what the tool is now
    assert health.usual_rate("t") > 0.99 and not health.down("t", SHARE, SIGNIFICANCE)


def test_each_partition_is_judged_on_its_own_recent_calls():
    """A worker reads partitions in batches: one partition's outage minute arrives
    interleaved with another's earlier, working calls. Each partition's calls are in
    event-time order; judged together they would hide the outage."""
    health = ToolHealth()
    calls(health, ("." * 9 + "x") * 6, lane=0)
    calls(health, ("." * 9 + "x") * 6, lane=1)
    for n in range(20):  # lane 1 is in the outage, lane 0 still an hour behind
        health.count("t", f"loop-1-{n % 4}", True, 1)
        calls(health, "..", lane=0)
    assert health.down("t", SHARE, SIGNIFICANCE, lane=1)
    assert not health.down("t", SHARE, SIGNIFICANCE, lane=0)
    mixed = ToolHealth()  # the same calls as one lane: the outage does not show
    calls(mixed, ("." * 9 + "x") * 12)
    for n in range(20):
        mixed.count("t", f"loop-1-{n % 4}", True)
        calls(mixed, "..")
    assert not mixed.down("t", SHARE, SIGNIFICANCE)


def test_tools_are_judged_apart_and_bounded():
    health = ToolHealth(most_tools=2)
    calls(health, "." * 60, tool="a")
    calls(health, "x" * 60, tool="b")
    calls(health, "." * 60, tool="c")  # "a" is forgotten
    assert health.usual_rate("a") is None
    assert health.usual_rate("b") > 0.9 and health.usual_rate("c") < 0.1


@pytest.mark.parametrize(("failure_rate", "partitions"), [(0.1, 0), (0.3, 8), (0.5, 0), (0.7, 8)])
def test_random_failures_of_many_loops_change_nothing_the_monitor_sends(failure_rate, partitions):
    """30 loops at 30 events/s failing at random, independently, with their tools' usual
    errors (no tool is down): the fleet declares no outage, and the monitor beside it
    sends every reflection request, lesson and warning it sends alone."""
    settings = Settings()
    events = random_failures(failure_rate=failure_rate, events=3000)
    alone = run_roles(settings, events, fleet=False, partitions=partitions)
    with_fleet = run_roles(settings, events, fleet=True, partitions=partitions)
    assert alone.lessons and alone.requests  # the workload fails, and is reflected on
    assert with_fleet.outages == []
    assert compare(alone, with_fleet) == {
        "requests_lost": 0,
        "lessons_lost": 0,
        "warnings_lost": 0,
        "warnings_added": 0,
        "warnings_differing": 0,
    }
