"""The adapters' pure parts: tool call → action fields, warnings → context, the inbox."""

from __future__ import annotations

import threading

import pytest

from loopwarden.schemas.tool_calls import (
    CONTEXT_HEADER,
    canonical_args,
    context_text,
    result_text,
    stop_text,
    tool_call_fields,
)
from loopwarden.schemas.warnings import LoopWarning
from loopwarden.streams.client.event_builder import make_action_event
from loopwarden.streams.client.inbox import WarningInbox, is_stop


def warning(loop_id="l1", n=0, step="warn", next_actions=(), trigger="e") -> LoopWarning:
    return LoopWarning(
        warning_id=f"w{n}",
        kind="repeated_call",
        loop_id=loop_id,
        level="standard",
        reason="the same call returned the same result 4 times in a row",
        event_ids=["e"],
        trigger_event_id=trigger,
        action_type="search",
        iteration=n,
        timeline_message=f"message {n}",
        occurred_at=1.0,
        step=step,
        next_actions=list(next_actions),
    )


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"b": 1, "a": [1, 2]}, {"b": 1, "a": [1, 2]}),
        ('{"q": "x"}', {"q": "x"}),
        ("ls -la", {"input": "ls -la"}),
        ("[1, 2]", {"input": [1, 2]}),
        ("", {}),
        (None, {}),
        (42, {"input": 42}),
        ({"when": __import__("datetime").date(2026, 1, 2)}, {"when": "2026-01-02"}),
    ],
)
def test_canonical_args(args, expected):
    assert canonical_args(args) == expected


def test_result_text_of_strings_messages_and_objects():
    class Message:
        content = "from a message"

    assert result_text(None) is None
    assert result_text("plain") == "plain"
    assert result_text(b"bytes") == "bytes"
    assert result_text(Message()) == "from a message"
    assert result_text({"b": 2, "a": 1}) == '{"a":1,"b":2}'  # sorted: equal results, equal text


def test_tool_call_fields_make_a_valid_event():
    ok = tool_call_fields('{"q": "x"}', result="found", tool_call_id="c1", response_id="r1")
    assert ok == {
        "params": {"q": "x"},
        "success": True,
        "result": "found",
        "tool_call_id": "c1",
        "response_id": "r1",
    }
    failed = tool_call_fields({}, error=RuntimeError("disk full"), duration_ms=3.5)
    assert failed["success"] is False and failed["error_message"] == "disk full"
    assert tool_call_fields({}, error=ValueError())["error_message"] == "ValueError"
    event = make_action_event("l1", "search", **failed)
    assert event.payload.failed and event.payload.duration_ms == 3.5


def test_context_and_stop_texts():
    text = context_text([warning(n=1), warning(n=2)])
    assert text.splitlines() == [CONTEXT_HEADER, "- (standard) message 1", "- (standard) message 2"]
    assert stop_text(warning(step="stop")) == (
        "[loopwarden] This run was stopped: it kept repeating itself. The same call returned "
        "the same result 4 times in a row."
    )  # a sentence of its own: issue 47 item 12 found it starting in lower case


def test_inbox_hands_each_warning_out_once_and_keeps_the_stop():
    inbox = WarningInbox()
    assert inbox.take("l1") == [] and inbox.stop_for("l1") is None
    inbox.add(warning(n=1))
    inbox.add(warning(n=2, step="stop"))
    assert [w.warning_id for w in inbox.take("l1")] == ["w1", "w2"]
    assert inbox.take("l1") == []
    assert inbox.stop_for("l1").warning_id == "w2"  # stays in force
    assert inbox.seen("l1") == 2
    inbox.forget("l1")
    assert inbox.stop_for("l1") is None and inbox.seen("l1") == 0


def test_guardrail_halts_count_as_stops():
    assert is_stop(warning(step=None, next_actions=["stop"]))
    assert not is_stop(warning(step="final"))


def test_inbox_keeps_only_accepted_loops_and_is_bounded():
    inbox = WarningInbox(max_loops=2, accept=lambda loop_id: loop_id != "other")
    assert not inbox.add(warning(loop_id="other"))
    for loop_id in ("a", "b", "c"):
        inbox.add(warning(loop_id=loop_id))
    assert inbox.seen("a") == 0 and inbox.seen("c") == 1  # the oldest loop was dropped


def test_inbox_wait_wakes_on_arrival_and_times_out():
    inbox = WarningInbox()
    assert not inbox.wait("l1", count=1, timeout_s=0.01)
    adder = threading.Timer(0.05, inbox.add, [warning(step="stop")])
    adder.start()
    assert inbox.wait("l1", stop=True, timeout_s=10)
    adder.join()


def test_inbox_wait_answer_ends_on_a_warning_about_that_event_or_a_stop():
    """An adapter waits for the verdict on the event it just published: a late warning
    about an earlier event does not end the wait (it did, with a count of warnings)."""
    inbox = WarningInbox()
    inbox.add(warning(n=1, trigger="e1"))
    assert not inbox.wait_answer("l1", "e2", timeout_s=0.01)
    adder = threading.Timer(0.05, inbox.add, [warning(n=2, trigger="e1")])
    adder.start()
    assert not inbox.wait_answer("l1", "e2", timeout_s=0.3)
    adder.join()
    inbox.add(warning(n=3, trigger="e2"))
    assert inbox.wait_answer("l1", "e2", timeout_s=0.01)
    inbox.add(warning(n=4, step="stop", trigger="e0"))
    assert inbox.wait_answer("l1", "e9", timeout_s=0.01)  # a stop answers every wait


def test_run_notes_repeat_the_latest_warnings():
    from loopwarden.adapters.notes import RunNotes

    notes = RunNotes(keep=2)
    assert notes.note("l1", []) is None
    first = notes.note("l1", [warning(n=1)])
    assert first is not None and first.startswith(CONTEXT_HEADER) and "message 1" in first
    assert notes.note("l1", []) == first  # every later call carries it again
    latest = notes.note("l1", [warning(n=2), warning(n=3)])
    assert "message 1" not in latest and "message 2" in latest and "message 3" in latest
    notes.forget("l1")
    assert notes.note("l1", []) is None


def test_a_guard_without_a_broker_never_waits_for_a_verdict():
    from loopwarden.adapters.guard import LoopGuard
    from loopwarden.streams.tools.broker import free_port

    guard = LoopGuard(bootstrap_servers=f"127.0.0.1:{free_port()}")  # nothing listens
    guard.verdict_wait_s = 5.0
    guard.publish("l1", "search", params={"q": 1})
    assert guard.await_verdict("l1") == 0.0
    guard.close()


def test_claude_code_hook_inputs_and_answers():
    from loopwarden.agents.hooks.claude_code import (
        HookInput,
        action_fields,
        post_tool_use_answer,
        pre_tool_use_answer,
    )

    base = {"session_id": "s1", "tool_name": "Bash", "tool_input": {"command": "make"}}
    ok = HookInput(**base, hook_event_name="PostToolUse", tool_response={"stdout": "done"})
    assert action_fields(ok) == (
        "Bash",
        {"params": {"command": "make"}, "success": True, "result": "done"},
    )  # what the tool said, not its JSON (a warning quotes it: issue 47 item 12)
    from loopwarden.agents.hooks.claude_code import response_text

    assert response_text({"stdout": "1 failed", "stderr": "warn", "interrupted": False}) == (
        "1 failed\nwarn"
    )
    assert response_text({"type": "text", "file": {"filePath": "a.py", "content": "x = 1"}}) == (
        "x = 1"
    )
    assert response_text({"answers": [1, 2]}) == {"answers": [1, 2]}  # no text: as is
    failed = HookInput(**base, hook_event_name="PostToolUseFailure", error="exit 2")
    assert action_fields(failed)[1]["error_message"] == "exit 2"
    interrupted = HookInput(
        **base, hook_event_name="PostToolUse", tool_response={"interrupted": True}
    )
    assert action_fields(interrupted)[1]["success"] is False
    assert action_fields(HookInput(**base, hook_event_name="PreToolUse")) is None
    end = action_fields(HookInput(session_id="s1", hook_event_name="SessionEnd"))
    assert end == ("loop_end", {"turn": "message", "terminated": True, "result": "session_end"})

    assert post_tool_use_answer([]) == {} and pre_tool_use_answer(None) == {}
    answer = post_tool_use_answer([warning()], "PostToolUseFailure")["hookSpecificOutput"]
    assert answer["hookEventName"] == "PostToolUseFailure"
    assert answer["additionalContext"].startswith(CONTEXT_HEADER)
    prompt = post_tool_use_answer([warning()], "UserPromptSubmit")["hookSpecificOutput"]
    assert prompt["hookEventName"] == "UserPromptSubmit"
    assert action_fields(HookInput(session_id="s1", hook_event_name="UserPromptSubmit")) is None
    said = HookInput(session_id="s1", hook_event_name="UserPromptSubmit", prompt="try again")
    assert action_fields(said) == ("user", {"turn": "counterpart", "result": "try again"})
    edit = {"session_id": "s1", "tool_name": "Edit", "tool_input": {"file_path": "a.py"}}
    missed = HookInput(**edit, hook_event_name="PostToolUseFailure", error="String not found")
    assert action_fields(missed)[1]["rejected"] is True  # checked before it changed anything
    assert "rejected" not in action_fields(failed)[1]  # a command that ran and failed
    deny = pre_tool_use_answer(warning(step="stop"))["hookSpecificOutput"]
    assert deny["permissionDecision"] == "deny" and "4 times" in deny["permissionDecisionReason"]


def test_a_claude_code_sub_agent_is_a_loop_of_the_sessions_family():
    from loopwarden.agents.hooks.claude_code import HookInput, action_fields

    family = {"parent_loop_id": "s1", "root_loop_id": "s1", "agent": "Explore"}
    inside = {"session_id": "s1", "agent_id": "a7", "agent_type": "Explore"}
    start = HookInput(**inside, hook_event_name="SubagentStart", prompt="find the callers")
    assert start.loop_id == "s1/a7"
    assert action_fields(start) == (
        "delegated_run_start",
        {"turn": "message", "task": "find the callers", **family},
    )
    call = HookInput(
        **inside, hook_event_name="PostToolUse", tool_name="Grep", tool_response="3 hits"
    )
    assert action_fields(call)[1] == {"params": {}, "success": True, "result": "3 hits", **family}
    end = HookInput(**inside, hook_event_name="SubagentStop")
    assert action_fields(end) == (
        "loop_end",
        {"turn": "message", "terminated": True, "result": "finalized", **family},
    )
    # the session itself: its own root; started with --agent, it is named
    main = HookInput(session_id="s1", agent_type="reviewer", hook_event_name="Stop")
    assert main.loop_id == "s1" and action_fields(main)[1]["agent"] == "reviewer"
    assert "parent_loop_id" not in action_fields(main)[1]
    # a SubagentStart without an agent id says nothing about a loop
    assert action_fields(HookInput(session_id="s1", hook_event_name="SubagentStart")) is None
    # a long session id still makes a valid loop id
    assert (
        len(HookInput(**{**inside, "session_id": "s" * 256}, hook_event_name="Stop").loop_id) <= 256
    )


def test_a_runs_note_carries_its_memories_before_its_warnings():
    from loopwarden.adapters.notes import MEMORY_HEADER, RunNotes, memory_text

    notes = RunNotes(keep=3)
    assert memory_text([]) is None
    notes.learned("l1", memory_text(["deploy as the deploy user"]))
    only = notes.note("l1", [])
    assert only == f"{MEMORY_HEADER}\n- deploy as the deploy user"
    both = notes.note("l1", [warning(n=1)])
    assert both.startswith(MEMORY_HEADER) and both.endswith("- (standard) message 1")


def test_recall_is_off_by_default_and_a_missing_worker_is_said_once(caplog):
    from loopwarden.adapters.guard import LoopGuard
    from loopwarden.settings import Settings
    from loopwarden.streams.tools.broker import free_port

    nowhere = f"127.0.0.1:{free_port()}"
    assert LoopGuard(bootstrap_servers=nowhere).recall("l1", "why?") == 0  # off: not asked
    base = Settings()
    adapters = base.adapters.model_copy(
        update={"memory_scope": "ops", "worker_url": f"http://127.0.0.1:{free_port()}"}
    )
    guard = LoopGuard(base.model_copy(update={"adapters": adapters}), bootstrap_servers=nowhere)
    with caplog.at_level("WARNING", logger="loopwarden.adapters"):
        assert guard.recall("l1", "why?") == 0
        assert guard.recall("l2", "why again?") == 0
    said = [r for r in caplog.records if "no memories for this agent's runs" in r.getMessage()]
    assert len(said) == 1
    assert guard.note("l1") is None
