"""Layer 1: the last N actions share one action type (seed 000 §2.1)."""

from loopwarden.agents.spin.action_type import ActionTypeStreak


def feed(types, threshold=3):
    streak = ActionTypeStreak()
    return [(streak.observe(t), streak.is_spinning(threshold)) for t in types]


def test_exactly_n_same_types_is_a_spin():
    assert feed(["read", "read", "read"])[-1] == (3, True)


def test_n_minus_one_is_not_a_spin():
    assert feed(["read", "read"])[-1] == (2, False)


def test_a_different_type_resets_the_streak():
    results = feed(["read", "read", "write", "read", "read"])
    assert [spinning for _, spinning in results] == [False] * 5
    assert results[2] == (1, False)


def test_spin_continues_while_the_type_repeats():
    results = feed(["a"] * 5)
    assert [count for count, _ in results] == [1, 2, 3, 4, 5]
    assert [spinning for _, spinning in results] == [False, False, True, True, True]


def test_threshold_is_a_parameter():
    assert feed(["a"] * 4, threshold=5)[-1] == (4, False)
    assert feed(["a"] * 5, threshold=5)[-1] == (5, True)


def test_snapshot_round_trip_keeps_the_streak():
    streak = ActionTypeStreak()
    streak.observe("a")
    streak.observe("a")
    restored = ActionTypeStreak.restore(streak.snapshot())
    assert restored.observe("a") == 3
    assert restored.is_spinning(3)
