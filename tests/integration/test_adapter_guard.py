"""The guard with the broker down: the agent is never blocked, told once, and nothing
queued is lost once a broker answers on that address."""

from __future__ import annotations

import logging
import uuid

import pytest

from loopwarden.adapters.guard import LoopGuard
from loopwarden.settings import Settings
from loopwarden.streams.tools.broker import EmbeddedBroker, free_port

from .adapter_harness import published_events
from .conftest import create_topics

pytestmark = pytest.mark.integration


def test_a_down_broker_never_blocks_the_agent_and_queued_calls_arrive_later(tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="loopwarden.adapters")
    port = free_port()
    settings = Settings().namespaced(
        f"down-{uuid.uuid4().hex[:6]}", bootstrap_servers=f"127.0.0.1:{port}", partitions=2
    )
    guard = LoopGuard(settings, retry_s=0.2).start()
    loop_id = "agent-without-broker"
    try:
        for n in range(5):  # returns at once: the agent's thread only hands over a tuple
            guard.tool_call(loop_id, "search", {"q": n}, result="r", tool_call_id=f"c{n}")
        assert guard.take(loop_id) == [] and guard.stop_for(loop_id) is None
        assert guard.wait_attempts(3, timeout_s=60), "the guard stopped retrying"
        assert not guard.ready
        said = [r for r in caplog.records if "keeps running unwatched" in r.getMessage()]
        assert len(said) == 1, [r.getMessage() for r in caplog.records]

        with EmbeddedBroker(port, log_path=tmp_path / "broker.log"):
            create_topics(settings)
            assert guard.wait_ready(60), "the guard did not reconnect"
            events = published_events(settings, loop_id, 5)
        assert [e["payload"]["tool_call_id"] for e in events] == [f"c{n}" for n in range(5)]
    finally:
        guard.close(timeout_s=5)
    # this guard's own thread (the session's adapter guard may run in this process too:
    # checking every thread of that name failed whenever an adapter test ran here first)
    assert not guard.running


def test_published_calls_carry_the_callers_trace_context(laddered):
    from opentelemetry.sdk.trace import TracerProvider

    settings, guard = laddered
    loop_id = f"traced-{uuid.uuid4().hex[:6]}"
    tracer = TracerProvider().get_tracer("agent")
    with tracer.start_as_current_span("execute_tool search") as span:
        guard.tool_call(loop_id, "search", {"q": 1}, result="r")
    guard.tool_call(loop_id, "search", {"q": 2}, result="r")  # outside any span
    traced, untraced = published_events(settings, loop_id, 2)
    trace_id = format(span.get_span_context().trace_id, "032x")
    assert traced["trace_context"]["traceparent"].split("-")[1] == trace_id
    assert "trace_context" not in untraced


def test_a_guard_reads_only_the_warning_partitions_of_its_loops(laddered):
    from loopwarden.streams.client.publisher import default_partition

    settings, other_guard = laddered
    partitions = settings.topics.partitions
    mine = f"mine-{uuid.uuid4().hex[:6]}"
    home = default_partition(mine.encode(), partitions)
    elsewhere = next(
        loop
        for loop in (f"elsewhere-{n}" for n in range(100))
        if default_partition(loop.encode(), partitions) != home
    )
    with LoopGuard(settings) as guard:
        assert guard.wait_ready(60)
        assert guard.followed_partitions == frozenset()
        for n in range(4):
            guard.tool_call(mine, "probe", {}, result="same", tool_call_id=f"m{n}")
            other_guard.tool_call(elsewhere, "probe", {}, result="same", tool_call_id=f"e{n}")
        assert guard.inbox.wait(mine, count=1, timeout_s=60)
        assert other_guard.inbox.wait(elsewhere, count=1, timeout_s=60)
        assert guard.followed_partitions == {home}
        assert guard.inbox.seen(elsewhere) == 0


def test_a_loop_watched_before_its_first_event_hears_what_its_family_is_told(laddered):
    """A root whose first tool call is a delegation publishes nothing until that call
    returns; the fleet warns it (named by its children) meanwhile. Its guard follows
    its warnings from the moment it is watched, so the warning reaches it."""
    from loopwarden.streams.client.publisher import default_partition

    settings, children_guard = laddered
    partitions = settings.topics.partitions
    root = f"root-{uuid.uuid4().hex[:6]}"
    home = default_partition(root.encode(), partitions)
    task = "Reconcile the ledger of account 4471 for October"
    with LoopGuard(settings) as guard:
        assert guard.wait_ready(60)
        guard.watch(root, agent="planner")
        # following is under way once the partition is listed (the guard's own thread)
        assert guard.wait_following(root, timeout_s=30)
        assert guard.followed_partitions == {home}
        for n in range(3):  # the same agent given the same task 3 times: a cycle
            child = f"{root}-c{n}"
            family = {"parent_loop_id": root, "root_loop_id": root, "task": task}
            children_guard.watch(child, agent="researcher", **family)
            children_guard.publish(child, "delegated_run_start", turn="message")
        assert guard.inbox.wait(root, count=1, timeout_s=60), "the root heard nothing"
        (told,) = guard.take(root)
        assert told.kind == "delegation_cycle" and told.step == "warn"


def test_every_event_is_answered_so_a_healthy_step_waits_only_for_the_worker(laddered):
    """With a bound of a minute, a healthy step's wait ends on the worker's verdicts
    (the monitor's and the fleet's, 'nothing to say'); the step that warns ends with
    its warning already in the inbox: the very next model call carries it."""
    settings, _ = laddered
    patient = settings.model_copy(
        update={"adapters": settings.adapters.model_copy(update={"verdict_wait_ms": 60_000})}
    )
    loop_id = f"answered-{uuid.uuid4().hex[:6]}"
    with LoopGuard(patient) as guard:
        assert guard.wait_ready(60)
        for n in range(4):  # the 4th identical call is the first finding
            event_id = f"{loop_id}-e{n}"
            guard.publish(loop_id, "probe", params={}, result="same", event_id=event_id)
            waited = guard.await_verdict(loop_id)
            assert waited < 30, f"call {n}: the wait ran out instead of ending on a verdict"
            answers = guard.inbox.answers(loop_id, event_id)
            assert set(answers) == {"monitor", "fleet"}, answers
            told = guard.take(loop_id)
            if n < 3:
                assert answers == {"monitor": 0, "fleet": 0} and told == []
            else:
                assert answers["monitor"] == len(told) == 1
                assert told[0].trigger_event_id == event_id
