"""Verdicts: what the kit answers for each event, and how an inbox ends a wait on them."""

from __future__ import annotations

import threading

from loopwarden.schemas.verdicts import Verdict, verdict_record
from loopwarden.schemas.warnings import LoopWarning
from loopwarden.streams.client.inbox import WarningInbox
from loopwarden.streams.runtime.verdicts import verdicts_of


def warning(loop_id: str, trigger: str, n: int = 0, step: str = "warn") -> dict:
    return {
        "warning_id": f"w-{loop_id}-{trigger}-{n}",
        "kind": "repeated_outcome",
        "loop_id": loop_id,
        "level": "critical",
        "reason": "the same again",
        "event_ids": [trigger],
        "trigger_event_id": trigger,
        "action_type": "search",
        "iteration": 4,
        "timeline_message": "[loopwarden] the same again",
        "occurred_at": 1.0,
        "step": step,
    }


def verdict(loop_id: str, event_id: str, role: str, warnings: int = 0, roles=None) -> Verdict:
    record = verdict_record(loop_id, role, {event_id: warnings}, roles or [role], 1.0)
    return Verdict.model_validate(record)


def test_every_seen_event_is_answered_once_per_loop_with_its_own_loops_warnings():
    seen = [("e1", "L"), ("e3", "child"), ("e2", "L"), ("e2", "L")]
    outputs = [
        ("warnings", warning("L", "e2")),
        ("warnings", warning("L", "e2", 1)),
        ("warnings", warning("root", "e3")),  # about the family's root: not this loop's
        ("reflection_requests", {"loop_id": "L", "trigger_event_id": "e1"}),
    ]
    found = verdicts_of(seen, outputs, "monitor", ["fleet", "monitor"], 5.0)
    assert [(v["loop_id"], v["answers"]) for v in found] == [
        ("L", {"e1": 0, "e2": 2}),
        ("child", {"e3": 0}),
    ]
    assert all(v["role"] == "monitor" and v["roles"] == ["fleet", "monitor"] for v in found)
    assert Verdict.model_validate(found[0]).type == "verdict"


def test_nothing_seen_nothing_answered():
    assert verdicts_of([], [("warnings", warning("L", "e1"))], "fleet", ["fleet"], 1.0) == []


def test_without_any_verdict_a_wait_ends_on_a_warning_only():
    inbox = WarningInbox()
    assert not inbox.wait_answer("L", "e1", timeout_s=0)
    inbox.add(LoopWarning.model_validate(warning("L", "e1")))
    assert inbox.wait_answer("L", "e1", timeout_s=0)


def test_a_wait_ends_when_every_answering_role_heard_of_has_answered():
    inbox = WarningInbox()
    both = ["fleet", "monitor"]
    inbox.answer(verdict("L", "e1", "monitor", roles=both))
    assert inbox.answering_roles() == {"fleet", "monitor"}
    assert not inbox.wait_answer("L", "e1", timeout_s=0), "the fleet has not answered"
    inbox.answer(verdict("L", "e1", "fleet", roles=both))
    assert inbox.wait_answer("L", "e1", timeout_s=0)
    assert inbox.answers("L", "e1") == {"fleet": 0, "monitor": 0}
    assert not inbox.wait_answer("L", "e2", timeout_s=0), "another event is not answered"


def test_an_announced_warning_is_waited_for_whatever_arrives_first():
    inbox = WarningInbox()
    inbox.answer(verdict("L", "e1", "monitor", warnings=1))
    assert not inbox.wait_answer("L", "e1", timeout_s=0), "the warning is still on its way"
    inbox.add(LoopWarning.model_validate(warning("L", "e1")))
    assert inbox.wait_answer("L", "e1", timeout_s=0)
    assert [w.trigger_event_id for w in inbox.take("L")] == ["e1"]


def test_a_stop_in_force_ends_every_wait():
    inbox = WarningInbox()
    inbox.answer(verdict("L", "e0", "monitor"))
    inbox.add(LoopWarning.model_validate(warning("L", "e0", step="stop")))
    assert inbox.wait_answer("L", "e9", timeout_s=0)


def test_a_verdict_from_another_thread_wakes_the_waiter():
    inbox = WarningInbox()
    inbox.answer(verdict("L", "e0", "monitor"))  # the answering roles are known
    arrived = threading.Event()
    waiter = threading.Thread(
        target=lambda: inbox.wait_answer("L", "e1", timeout_s=60) and arrived.set()
    )
    waiter.start()
    inbox.answer(verdict("L", "e1", "monitor"))
    waiter.join(60)
    assert arrived.is_set()


def test_one_verdict_answers_every_event_it_names():
    inbox = WarningInbox()
    inbox.answer(Verdict.model_validate(verdict_record("L", "monitor", {"a": 0, "b": 0}, [], 1.0)))
    assert inbox.wait_answer("L", "a", timeout_s=0) and inbox.wait_answer("L", "b", timeout_s=0)


def test_verdicts_of_loops_not_accepted_are_not_kept():
    inbox = WarningInbox(accept=lambda loop_id: loop_id == "mine")
    assert not inbox.answer(verdict("other", "e1", "monitor"))
    assert inbox.answer(verdict("mine", "e1", "monitor"))
    assert inbox.answers("other", "e1") == {} and inbox.answers("mine", "e1") == {"monitor": 0}
