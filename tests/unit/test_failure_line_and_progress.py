"""The line that says why a call failed, and the figures that make a result progress."""

from types import SimpleNamespace

from loopwarden.agents.spin.failure_line import failure_key, failure_line
from loopwarden.agents.spin.progress import figures_key, polls, tool_rule
from loopwarden.agents.spin.repeated_outcome import RepeatedOutcome


def out(result=None, error=None, **params):
    return SimpleNamespace(
        result=result, error_message=error, params=params, action_type="shell", action_name=None
    )


def test_the_reason_is_the_last_line_that_says_why_not_the_header():
    run = (
        "==== test session starts ====\ncollected 3\nE   assert 1 == 2\n"
        "FAILED t.py::x - CardDeclined: insufficient_funds\n=== 1 failed in 0.2s"
    )
    assert (
        failure_line(out(run, "exit code 1")) == "FAILED t.py::x - CardDeclined: insufficient_funds"
    )
    trace = "Traceback (most recent call last):\n  File 'a.py', line 3\nKeyError: 'id'"
    assert failure_line(out(trace)) == "KeyError: 'id'"
    assert failure_line(out(None, "Error: not enough seats")) == "Error: not enough seats"
    assert failure_line(out("NAME READY\nweb 0/3")) == "NAME READY"  # no reason: the first line
    assert failure_line(out()) == ""


def test_the_same_reason_with_other_numbers_is_one_key():
    three = out("Please provide EXACTLY ONE action, found 3 actions.")
    two = out("Please provide EXACTLY ONE action, found 2 actions.")
    other = out("Please use a bash block.")
    assert failure_key(three) == failure_key(two) != failure_key(other)


def test_figures_keep_counts_and_drop_times_ids_and_durations():
    assert figures_key("web 1/3 ready, age 12s") == figures_key("web 1/3 ready, age 40s")
    assert figures_key("web 1/3 ready") != figures_key("web 2/3 ready")
    at = "pending: 800 at 2026-01-01T10:00:00Z pid 123456789 id 3f2a9c1b7d"
    later = "pending: 800 at 2026-01-01T10:05:00Z pid 987654321 id 9a8b7c6d5e"
    assert figures_key(at) == figures_key(later)
    assert figures_key("pending: 800") != figures_key("pending: 350")
    assert figures_key(None) is None


def test_tool_rules_match_type_or_name_and_waiting_commands_poll():
    tools = {"kubectl get *": "poll", "get_*": "exempt"}
    kubectl = SimpleNamespace(action_type="shell", action_name="kubectl get deploy", params={})
    assert tool_rule(kubectl, tools) == "poll"
    assert tool_rule(SimpleNamespace(action_type="get_queue", action_name=None), tools) == "exempt"
    assert tool_rule(SimpleNamespace(action_type="ls", action_name="ls"), tools) == "numbers"
    assert polls(out(command="sleep 30 && gh run view 1"), "numbers")
    assert polls(out(command="kubectl rollout status deploy/web --watch"), "numbers")
    assert not polls(out(command="grep -n sleep src/app.py"), "numbers")
    assert polls(out(command="ls"), "poll")


def test_repeated_outcome_restores_a_state_from_before_polls_were_kept():
    old = {"": [["e1", 1, "sig", "key", [], [], None]]}
    restored = RepeatedOutcome.restore(old)
    assert restored.calls == old and restored.polls == {}
    restored.polls["sig"] = [2, 0]
    assert RepeatedOutcome.restore(restored.snapshot()).polls == {"sig": [2, 0]}
