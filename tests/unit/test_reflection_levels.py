"""The reflection decision tree (seed 000 §1.2) and stage 3 budgets."""

import pytest

from loopwarden.agents.reflection.levels import (
    decide_reflection_level,
    memory_budget_bytes,
    memory_query,
)
from loopwarden.schemas.levels import ReflectionLevel as L

BASE = dict(enabled=True, override=None, failed=False, simple=False, iteration=1, spinning=False)


def decide(**changes):
    return decide_reflection_level(**{**BASE, **changes})


def test_disabled_wins_over_everything():
    assert decide(enabled=False, override=L.CRITICAL, failed=True, spinning=True) is L.NONE


def test_operator_override_wins_over_failure():
    assert decide(override=L.DEEP, failed=True) is L.DEEP
    assert decide(override=L.MINIMAL, failed=True) is L.MINIMAL


def test_override_of_none_is_no_override():
    assert decide(override=L.NONE, failed=True) is L.CRITICAL


def test_failure_is_critical_even_for_simple_actions():
    assert decide(failed=True, simple=True, iteration=10, spinning=True) is L.CRITICAL


def test_simple_action_is_minimal_even_when_spinning_late():
    assert decide(simple=True, iteration=10, spinning=True) is L.MINIMAL


@pytest.mark.parametrize(
    ("iteration", "spinning", "level"),
    [
        (5, True, L.MINIMAL),  # not > 5
        (6, True, L.STANDARD),
        (6, False, L.MINIMAL),
        (1, True, L.MINIMAL),
    ],
)
def test_iteration_threshold(iteration, spinning, level):
    assert decide(iteration=iteration, spinning=spinning) is level


def test_threshold_is_a_parameter():
    assert decide(iteration=3, spinning=True, iteration_threshold=2) is L.STANDARD


def test_levels_are_ordered():
    assert [lvl.rank for lvl in L] == [0, 1, 2, 3, 4]
    assert L.CRITICAL.at_least(L.STANDARD) and not L.MINIMAL.at_least(L.STANDARD)


def test_memory_budgets_follow_the_seed():
    assert [memory_budget_bytes(lvl) for lvl in L] == [0, 0, 2048, 5120, 10240]


def test_memory_query_adds_the_error_for_failures():
    assert memory_query("shell", True, "x") == (
        "action 'shell' execution analysis failure success pattern"
    )
    assert memory_query("shell", False, "permission denied").endswith(" permission denied")
