"""Layer 3: code-edit spin (seed 000 §2.3), counted as the seed's code counts it."""

import pytest

from loopwarden.agents.spin.code_edit import CodeEditSpinDetector, is_same_region, is_small_edit


def run(edits, **kw):
    detector = CodeEditSpinDetector()
    results = []
    for seq, (start, end) in enumerate(edits, 1):
        results.append(
            detector.observe(seq=seq, event_id=f"e{seq}", start_line=start, end_line=end, **kw)
        )
    return detector, results


@pytest.mark.parametrize(
    ("prev", "cur", "same"),
    [
        ((10, 12), (15, 17), True),  # both +5
        ((10, 12), (5, 7), True),  # both -5
        ((10, 12), (16, 17), False),  # start +6
        ((10, 12), (10, 18), False),  # end +6
        ((10, 12), (4, 12), False),  # start -6
    ],
)
def test_region_is_plus_minus_five_lines(prev, cur, same):
    assert is_same_region(*prev, *cur, region_lines=5) is same


def test_small_edit_is_at_most_three_lines():
    assert is_small_edit(10, 12, 3)  # 3 lines
    assert not is_small_edit(10, 13, 3)  # 4 lines


def test_count_reaches_three_on_the_fourth_edit():
    # The seed's prose says "three small edits"; its code compares each edit with
    # the previous one, so the first edit only starts the region and the count
    # reaches 3 on the fourth. The code's formula stands (ARCHITECTURE.md).
    _, results = run([(40, 42), (41, 43), (40, 41), (42, 44)])
    assert results[:3] == [None, None, None]
    spin = results[3]
    assert spin is not None
    assert (spin.start_line, spin.end_line, spin.count) == (42, 44, 3)
    assert spin.event_ids == ("e1", "e2", "e3", "e4")


def test_spin_repeats_while_the_edits_continue():
    _, results = run([(40, 42)] * 6)
    assert [r.count if r else None for r in results] == [None, None, None, 3, 4, 5]


def test_six_lines_away_resets():
    _, results = run([(40, 42), (41, 43), (40, 41), (46, 47), (47, 48), (46, 48), (47, 49)])
    assert results[3] is None  # start moved by 6: reset to 0
    assert results[6] is not None and results[6].count == 3


def test_plus_minus_five_still_counts():
    _, results = run([(40, 42), (45, 47), (40, 42), (45, 47)])
    assert results[3] is not None and results[3].count == 3


def test_four_line_edit_resets():
    _, results = run([(40, 42), (41, 43), (40, 43), (41, 43), (40, 42)])
    assert all(r is None for r in results)


def test_three_line_edits_count():
    _, results = run([(40, 42), (41, 43), (42, 44), (41, 43)])
    assert results[3] is not None


def test_previous_edit_outside_the_lookback_does_not_match():
    detector = CodeEditSpinDetector()
    detector.observe(seq=1, event_id="a", start_line=10, end_line=11)
    detector.observe(seq=2, event_id="b", start_line=10, end_line=11)
    assert detector.count == 1
    detector.observe(seq=13, event_id="c", start_line=10, end_line=11)  # 11 actions later
    assert detector.count == 0
    detector.observe(seq=23, event_id="d", start_line=10, end_line=11)  # exactly 10 later
    assert detector.count == 1


def test_snapshot_round_trip():
    detector, _ = run([(40, 42), (41, 43), (40, 41)])
    restored = CodeEditSpinDetector.restore(detector.snapshot())
    spin = restored.observe(seq=4, event_id="e4", start_line=41, end_line=42)
    assert spin is not None and spin.event_ids == ("e1", "e2", "e3", "e4")
