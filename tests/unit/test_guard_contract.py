"""The guard contract, scenario by scenario, with no broker (docs/guard-contract.md).

``tests/fixtures/guard_scenarios.json`` is shared with the TypeScript client's suite
(``clients/typescript/test/guard-contract.test.ts``): the same events in, the same
notes, stops and published fields out, for :class:`~loopwarden.adapters.guard_state.GuardState`
(the half of :class:`~loopwarden.adapters.guard.LoopGuard` that needs no Kafka) here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loopwarden.adapters.guard import LoopGuard
from loopwarden.adapters.guard_state import GuardState
from loopwarden.adapters.notes import memory_text
from loopwarden.schemas.tool_calls import context_text
from loopwarden.schemas.warnings import LoopWarning

SCENARIOS = json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures" / "guard_scenarios.json").read_text()
)


def expected_note(expect: dict[str, Any] | None, warnings: dict[str, LoopWarning]) -> str | None:
    """The note a scenario expects, in this client's words."""
    if expect is None:
        return None
    shown = [warnings[warning_id] for warning_id in expect["warnings"]]
    parts = [memory_text(expect["memories"]), context_text(shown) if shown else None]
    return "\n\n".join(part for part in parts if part)


def run(scenario: dict[str, Any], state: GuardState) -> None:
    """Apply the scenario's steps to ``state``, checking each expectation."""
    warnings: dict[str, LoopWarning] = {}
    for number, step in enumerate(scenario["steps"]):
        where = f"{scenario['name']}, step {number}: {step}"
        if "watch" in step:
            state.watch(step["watch"], step.get("family"))
        elif "warning" in step:
            warning = LoopWarning.model_validate({**SCENARIOS["warning_base"], **step["warning"]})
            warnings[warning.warning_id] = warning
            assert state.add(warning) is step["kept"], where
        elif "publish" in step:
            payload = state.outgoing(step["publish"], dict(step["payload"]))
            for name, value in step["expect"]["carries"].items():
                assert payload.get(name) == value, where
            assert not set(step["expect"]["lacks"]) & set(payload), where
        elif "due" in step:
            assert (state.due(step["due"]) is not None) is step["expect"], where
        elif "note" in step:
            assert state.note(step["note"]) == expected_note(step["expect"], warnings), where
        elif "stop" in step:
            stop = state.stop_for(step["stop"])
            assert (stop.warning_id if stop else None) == step["expect"], where
        elif "learned" in step:
            state.learned(step["learned"], step["memories"])
        elif "lineage" in step:
            assert state.lineage(step["lineage"]) == step["expect"], where
        elif "forget" in step:
            state.forget(step["forget"])
        else:
            raise AssertionError(f"unknown step {step}")


@pytest.mark.parametrize("scenario", SCENARIOS["scenarios"], ids=lambda s: s["name"])
def test_the_guard_state_keeps_the_contract(scenario):
    run(scenario, GuardState(scenario["shown_warnings"]))


def test_the_guard_is_its_state_plus_kafka():
    """LoopGuard's answers are its GuardState's (nothing started: no broker needed)."""
    guard = LoopGuard()
    guard.state.watch("run-a")  # as guard.watch does, without starting its connection
    warning = LoopWarning.model_validate(
        {**SCENARIOS["warning_base"], "warning_id": "w1", "loop_id": "run-a", "step": "stop"}
    )
    assert guard.inbox.add(warning)
    assert guard.stop_for("run-a") is guard.state.stop_for("run-a") is not None
    assert guard.note("run-a") == context_text([warning])
    assert guard.lineage("run-a") == {} and not guard.running


def test_every_step_kind_is_run_by_both_suites():
    """The TypeScript runner handles the same step kinds (its test fails on an unknown one)."""
    kinds = {next(iter(step)) for s in SCENARIOS["scenarios"] for step in s["steps"]}
    assert kinds == {
        "watch",
        "warning",
        "publish",
        "due",
        "note",
        "stop",
        "learned",
        "lineage",
        "forget",
    }
