"""The calibrated gate and its features: the step history, the shipped model, the two
proposers, and the gated monitor's records (issue 69)."""

from __future__ import annotations

import math

import pytest

from loopwarden.agents.monitor.loop_monitor import LoopMonitor
from loopwarden.agents.monitor.state import LoopState
from loopwarden.agents.spin import gate as gates
from loopwarden.agents.spin.step_features import FEATURES, StepHistory, _cycle, says_something
from loopwarden.errors import ConfigurationError
from loopwarden.schemas.events import validate_action
from loopwarden.schemas.positions import Origin
from loopwarden.schemas.warnings import LoopWarning
from loopwarden.settings import DetectionSettings


def event(n: int, **payload):
    payload.setdefault("action_type", "tool")
    return validate_action(
        {"event_id": f"e{n}", "loop_id": "L", "occurred_at": float(n), "payload": payload}
    )


def feature(x: list[float], name: str) -> float:
    return x[FEATURES.index(name)]


def test_cycles_of_any_period_are_found_and_a_new_token_breaks_them():
    tour = [f"stop{i}" for i in range(7)]
    repeats, period = _cycle(tour + tour[:-1], tour[-1])
    assert (repeats, period) == (1.0, 7)  # the seven stops walked again
    assert _cycle(["a", "b", "a"], "b") == (1.0, 2)
    assert _cycle(["a", "b", "a"], "c") == (0.0, 0)
    assert _cycle(["x", "x", "x"], "x")[1] == 1


def test_the_same_failure_line_is_counted_across_varied_arguments():
    history = StepHistory()
    xs = [
        history.observe(
            event(n, params={"id": n}, success=False, result="Error: no downloads left"),
            f"sig{n}",
            f"digest{n}",
        )
        for n in range(4)
    ]
    assert [round(math.expm1(feature(x, "failure_line_seen"))) for x in xs] == [0, 1, 2, 3]
    assert feature(xs[-1], "call_seen") == 0.0  # four different calls
    assert feature(xs[-1], "failure_streak") == pytest.approx(math.log1p(4))


def test_novelty_and_what_changed_between_repeats():
    history = StepHistory()
    history.observe(event(0, result="tests fail: ValueError bad value"), "run", "r1")
    history.observe(
        event(
            1, edit={"start_line": 3, "end_line": 4}, result="edited app.py lines three and four"
        ),
        "ed",
        "r2",
    )
    again = history.observe(event(2, result="tests fail: ValueError bad value"), "run", "r1")
    assert feature(again, "changed_since_repeat") == 1.0  # an edit came between
    assert feature(again, "new_between_repeats") == 1.0  # and it was new
    assert feature(again, "steps_since_new_outcome") > 0
    history.hear()
    heard = history.observe(event(3, result="tests fail: ValueError bad value"), "run", "r1")
    assert feature(heard, "counterpart_since_repeat") == 1.0


def test_an_empty_wrapped_output_is_not_an_outcome():
    assert not says_something("<returncode>0</returncode>\n<output>\n</output>")
    assert says_something("Error: flight HAT030 not available")
    history = StepHistory()
    for n in range(3):
        x = history.observe(
            event(n, result="<returncode>0</returncode><output></output>"), f"w{n}", "same"
        )
    assert feature(x, "outcome_seen") == 0.0  # three writes that print nothing


def test_the_history_is_bounded_and_survives_a_snapshot():
    history = StepHistory()
    for n in range(200):
        history.observe(event(n, result=f"line {n} of the file"), f"s{n % 5}", f"d{n % 7}")
    assert len(history.steps) == 48
    copy = StepHistory.restore(history.snapshot())
    nxt = event(200, result="line 0 of the file")
    assert copy.observe(nxt, "s0", "d0") == history.observe(nxt, "s0", "d0")


def test_the_shipped_model_loads_and_scores_deterministically():
    model = gates.load()
    assert model.trees and 0.0 < model.threshold < 1.0
    assert model.trained_on["id"].startswith("gate-")
    assert set(model.trusted) <= set(model.proposers)
    x = model.vector([0.0] * len(FEATURES), ["failure_line_repeat"])
    score = model.score(x)
    assert 0.0 <= score <= 1.0 and score == model.score(list(x))
    parts = model.contributions(x)
    leaves = sum(tree.leaf(x) - tree.value[0] for tree in model.trees)
    assert sum(parts.values()) == pytest.approx(leaves)  # the attributions add up


def test_more_repetition_never_lowers_the_score():
    model = gates.load()
    base = [0.0] * len(FEATURES)
    scores = []
    for count in range(6):
        step = list(base)
        step[FEATURES.index("failure_line_seen")] = math.log1p(count)
        scores.append(model.score(model.vector(step, ["failure_line_repeat"])))
    assert scores == sorted(scores)


def test_a_model_of_other_features_is_refused_by_name(tmp_path):
    data = gates.load().to_json()
    path = tmp_path / "gate.json"
    path.write_text('{"version": 1, "kind": "boosted_trees", "features": ["x"], "trees": []}')
    with pytest.raises(ConfigurationError, match="step features"):
        gates.load(str(path))
    with pytest.raises(ConfigurationError, match="not a gate model"):
        gates.GateModel.from_json({**data, "version": 99})
    with pytest.raises(ConfigurationError, match="trusted rules"):
        gates.GateModel.from_json({**data, "trusted": ["nope"]})


def failing_runs(n: int) -> list:
    return [
        event(
            i,
            action_type="download",
            params={"id": i},
            success=False,
            result="Error: no downloads left on this account",
        )
        for i in range(n)
    ]


def test_the_gated_monitor_shows_the_gate_in_the_record_not_in_the_text():
    monitor = LoopMonitor(DetectionSettings())
    state = LoopState("L")
    shown = []
    for i, e in enumerate(failing_runs(5)):
        shown += monitor.observe(state, e, Origin(0, i)).warnings
    assert shown, "five downloads failing for one reason"
    first = LoopWarning.model_validate(shown[0])
    assert first.gate is not None and first.gate.score >= first.gate.threshold
    assert first.gate.features and "score" not in first.timeline_message
    restored = LoopState.restore("L", state.snapshot())
    assert restored.history is not None and restored.history.count == 5


def test_the_threshold_is_one_setting():
    strict = LoopMonitor(DetectionSettings(gate_threshold=1.0))
    state = LoopState("L")
    shown = []
    for i, e in enumerate(failing_runs(5)):
        shown += strict.observe(state, e, Origin(0, i)).warnings
    assert all(w["gate"]["trusted"] for w in shown)  # only trusted rules pass at 1.0
    off = LoopMonitor(DetectionSettings(gate=False))
    assert off.gate is None
