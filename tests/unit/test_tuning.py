"""Leave-one-source-out tuning: settings chosen on the other sources, scored on one."""

from __future__ import annotations

from loopwarden.evaluation import tuning
from loopwarden.evaluation.dataset import Run, Segment


def run(loop_id: str, source: str, looping: bool) -> Run:
    segments = [Segment(start=4, evident=6, end=8, kind="cycle")] if looping else []
    return Run(loop_id, source, [{}] * 12, segments)


RUNS = [run(f"{source}-{i}", source, looping=i < 2) for source in ("a", "b", "c") for i in range(4)]


def positions_of(choice: tuning.Choice) -> dict[str, list[int]]:
    """A detector with one knob: at ``k`` 1 it finds every loop and warns every run of
    source c wrongly, at 2 it finds the loops of a and b only, at 3 nothing."""
    k = dict(choice)["k"]
    out: dict[str, list[int]] = {}
    for r in RUNS:
        if k == 1:
            out[r.loop_id] = [5] if r.looping else ([1] if r.source == "c" else [])
        elif k == 2:
            out[r.loop_id] = [5] if r.looping and r.source != "c" else []
        else:
            out[r.loop_id] = []
    return out


def test_the_choice_maximises_the_objective_on_the_training_sources_only():
    calls: list[tuning.Choice] = []

    def counted(choice: tuning.Choice) -> dict[str, list[int]]:
        calls.append(choice)
        return positions_of(choice)

    evaluator = tuning.Evaluator(RUNS, counted)
    grid = {"k": (1, 2, 3)}
    # a and b alone: k=1 and k=2 find every loop without a false alarm; ties keep the start
    assert tuning.choose(evaluator, ["a", "b"], (("k", 3),), grid) == (("k", 1),)
    # with c: k=1 warns c's loop-free runs (mean false alarms 1/3: 1 - 2/3 = 0.33),
    # k=2 misses c's loops (mean recall 2/3: 0.67) and is chosen
    chosen = tuning.choose(evaluator, ["a", "b", "c"], (("k", 3),), grid)
    assert chosen == (("k", 2),)
    assert len(set(calls)) == 3  # each candidate's warnings computed once


def test_each_source_is_scored_with_settings_chosen_without_it():
    evaluator = tuning.Evaluator(RUNS, positions_of)
    done: list[str] = []
    folds = tuning.leave_one_source_out(
        evaluator, ["a", "b", "c"], (("k", 3),), {"k": (1, 2, 3)}, done.append
    )
    assert done == ["a", "b", "c"]
    # c held out: chosen on a and b (k=1), which warns c's loop-free runs
    choice, figures = folds["c"]
    assert choice == (("k", 1),)
    assert figures.recall == 1.0 and figures.false_alarms == 1.0
    # a held out: chosen on b and c (k=2), which finds a's loops
    assert folds["a"][0] == (("k", 2),) and folds["a"][1].recall == 1.0
    summary = tuning.summary([f for _c, f in folds.values()])
    assert summary["false_alarms_worst"] == 1.0
    assert summary["recall_worst"] == 1.0
