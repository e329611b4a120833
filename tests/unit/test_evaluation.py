"""Detection figures against annotated loops, and how dataset lines become events."""

from __future__ import annotations

import json

import pytest

from loopwarden.evaluation.dataset import Run, Segment, as_event, load
from loopwarden.evaluation.replay import warnings_of
from loopwarden.evaluation.scoring import score
from loopwarden.settings import DetectionSettings, Settings


def run(loop_id: str, n: int, *segments: Segment) -> Run:
    return Run(loop_id, "src", [{"loop_id": loop_id}] * n, list(segments))


def test_figures_follow_the_annotation_rules():
    looping = run("a", 20, Segment(start=5, evident=8, end=10, kind="cycle"))
    late = run("b", 30, Segment(start=10, evident=12, end=14, kind="reread"))
    free = run("c", 50)
    quiet = run("d", 50)
    figures = score(
        [looping, late, free, quiet],
        {"a": [3, 9, 12], "b": [16, 25], "c": [7]},  # 12 = end + 2 hits; 16 = end + 2 hits
    )
    assert figures.recall == 1.0
    assert figures.timely == 0.5  # a by evident + 2 (9); b only at 16
    assert figures.false_alarms == 0.5
    assert figures.precision == pytest.approx(3 / 6)
    assert figures.per_100 == pytest.approx(100 * 1 / 100)
    assert figures.median_delay == pytest.approx((1 + 4) / 2)


def test_nothing_warned_scores_zero_recall_and_no_precision():
    figures = score([run("a", 5, Segment(1, 2, 3, "x")), run("b", 5)], {})
    assert (figures.recall, figures.false_alarms, figures.precision) == (0.0, 0.0, None)


def test_a_chat_turn_becomes_a_message_of_its_agent():
    line = {
        "loop_id": "L",
        "event_id": "L#1",
        "action_type": "Orchestrator (-> WebSurfer)",
        "params": {"agent": "Orchestrator", "command": "Please click", "command_sha1": "ab"},
        "success": True,
    }
    event = as_event(line)
    assert event["turn"] == "message" and event["agent"] == "Orchestrator"
    assert event["result"] == "Please click" and event["result_digest"] == "ab"
    assert event["params"] == {}


def test_a_turn_answered_by_a_result_is_a_call_of_its_agent():
    line = {
        "loop_id": "L",
        "action_type": "assistant",
        "params": {"agent": "assistant", "command": "get_order('W1')", "observation": "pending"},
    }
    event = as_event(line)
    assert "turn" not in event and event["agent"] == "assistant"
    assert event["params"] == {"command": "get_order('W1')"} and event["result"] == "pending"


def test_a_tool_call_keeps_its_arguments_and_result():
    line = {
        "loop_id": "L",
        "action_type": "refund",
        "params": {
            "source": "x",
            "payment_id": "p1",
            "observation": "declined",
            "observation_sha1": "cd",
            "success_basis": "none",
            "edit_file": "a.py",
        },
        "edit": {"start_line": 1, "end_line": 2},
    }
    event = as_event(line)
    assert event["params"] == {"payment_id": "p1"}
    assert (event["result"], event["result_digest"], event["success"]) == ("declined", "cd", None)
    assert event["edit"]["file"] == "a.py"


def test_a_dataset_directory_is_read_and_replayed(tmp_path):
    events = tmp_path / "events" / "tool"
    events.mkdir(parents=True)
    lines = [
        {"loop_id": "R", "event_id": f"R#{i}", "action_type": "cat", "params": p}
        for i, p in enumerate(
            [{"command": "cat a", "observation": "same", "observation_sha1": "s"}] * 3
        )
    ]
    (events / "R.jsonl").write_text("\n".join(json.dumps(line) for line in lines))
    (events / "unannotated.jsonl").write_text(json.dumps({**lines[0], "loop_id": "U"}))
    note = {"loop_id": "R", "looping": True, "segments": [{"start": 0, "evident": 2, "end": 2}]}
    (tmp_path / "loops.jsonl").write_text(json.dumps(note))
    (runs,) = load(tmp_path)
    assert (runs.loop_id, runs.source, runs.looping) == ("R", "tool", True)
    default = warnings_of(Settings(), [runs])
    assert [(s.position, s.kind, s.step) for s in default["R"]] == [(2, "repeated_outcome", "warn")]
    seed = Settings(detection=DetectionSettings(profile="seed"))
    assert [s.position for s in warnings_of(seed, [runs])["R"]] == [2]  # Layer 1 at 3
