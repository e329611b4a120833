"""Choosing a profile's settings on some sources and scoring them on another.

Detection must hold on agents it was not tuned on, so its settings are judged
*leave-one-source-out*: for each source, the settings are chosen on the other sources
(:func:`choose`) and the figures are those on the source left out. The headline is
the worst source and the mean over sources, never the pooled in-sample number.

:func:`choose` is a coordinate search over :data:`GRID` (each setting in turn tries its
candidates with the others held, twice round) maximising :func:`objective` over the
training sources. Every candidate's warnings are computed once for every run and
memoised (:class:`Evaluator`): a run's warnings do not depend on which sources are
being tuned on, so the folds share the work.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import mean
from typing import Any

from loopwarden.evaluation.dataset import Run
from loopwarden.evaluation.scoring import Figures, score

GRID: dict[str, tuple[Any, ...]] = {
    "outcome_repeats": (3, 4),
    "outcome_unknown_repeats": (3, 4, 5),
    "retry_similarity": (0.3, 0.5, 0.65, 0.8),
    "result_similarity": (0.8, 0.9),
    "message_similarity": (0.6, 0.7, 0.8),
    "message_repeats": (3, 4),
    "restate_similarity": (0.55, 0.6, 0.65, 0.7, 0.75),
    "restate_window": (3, 4, 5),
}
"""The settings the default profile is tuned by (``detection.<name>``), and their
candidates: counts of repeats and similarity cut-offs, nothing fitted to one agent."""

FALSE_ALARM_WEIGHT = 2.0
PRECISION_FLOOR = 0.6

Choice = tuple[tuple[str, Any], ...]
"""A setting for each name of the grid, in the grid's order."""


def objective(per_source: Mapping[str, Figures]) -> float:
    """What tuning maximises over the training sources: mean recall and mean timely
    recall, less ``FALSE_ALARM_WEIGHT`` times the mean false-alarm rate, less the
    shortfall of the mean precision below ``PRECISION_FLOOR``. Every source counts
    alike, however many runs it has."""
    figures = list(per_source.values())
    recall = mean(f.recall for f in figures)
    timely = mean(f.timely for f in figures)
    alarms = mean(f.false_alarms for f in figures)
    precision = mean(f.precision or 0.0 for f in figures)
    return (
        (recall + timely) / 2 - FALSE_ALARM_WEIGHT * alarms - max(0.0, PRECISION_FLOOR - precision)
    )


@dataclass
class Evaluator:
    """Warning positions per run for a choice of settings, computed once each."""

    runs: Sequence[Run]
    positions_of: Callable[[Choice], dict[str, list[int]]]
    """Runs the monitor with a choice over every run (``benchmarks/detection_quality.py``)."""
    seen: dict[Choice, dict[str, list[int]]] = field(default_factory=dict)

    def positions(self, choice: Choice) -> dict[str, list[int]]:
        if choice not in self.seen:
            self.seen[choice] = self.positions_of(choice)
        return self.seen[choice]

    def figures(self, choice: Choice, sources: Sequence[str]) -> dict[str, Figures]:
        """Per source, the figures of ``choice``."""
        where = self.positions(choice)
        return {
            source: score([r for r in self.runs if r.source == source], where) for source in sources
        }


def choose(
    evaluator: Evaluator,
    sources: Sequence[str],
    start: Choice,
    grid: Mapping[str, Sequence[Any]] = GRID,
    rounds: int = 2,
) -> Choice:
    """The choice that maximises :func:`objective` on ``sources``: each setting in turn
    takes its best candidate with the others held, ``rounds`` times round. Ties keep
    the current value (no move without a gain)."""
    current = dict(start)
    best = objective(evaluator.figures(start, sources))
    for _ in range(rounds):
        moved = False
        for name, candidates in grid.items():
            for value in candidates:
                if value == current[name]:
                    continue
                trial = dict(current, **{name: value})
                choice = tuple(trial.items())
                gain = objective(evaluator.figures(choice, sources))
                if gain > best + 1e-9:
                    best, current, moved = gain, trial, True
        if not moved:
            break
    return tuple(current.items())


def leave_one_source_out(
    evaluator: Evaluator,
    sources: Sequence[str],
    start: Choice,
    grid: Mapping[str, Sequence[Any]] = GRID,
    progress: Callable[[str], None] | None = None,
) -> dict[str, tuple[Choice, Figures]]:
    """Per source: the choice made on the other sources and its figures on this one."""
    out = {}
    for held_out in sources:
        training = [s for s in sources if s != held_out]
        choice = choose(evaluator, training, start, grid)
        out[held_out] = (choice, evaluator.figures(choice, [held_out])[held_out])
        if progress is not None:
            progress(held_out)
    return out


def summary(figures: Sequence[Figures]) -> dict[str, float]:
    """Mean and worst over sources: recall, timely, false alarms, precision."""
    return {
        "recall_mean": mean(f.recall for f in figures),
        "recall_worst": min(f.recall for f in figures),
        "timely_mean": mean(f.timely for f in figures),
        "timely_worst": min(f.timely for f in figures),
        "false_alarms_mean": mean(f.false_alarms for f in figures),
        "false_alarms_worst": max(f.false_alarms for f in figures),
        "precision_mean": mean(f.precision or 0.0 for f in figures),
        "precision_worst": min(f.precision or 0.0 for f in figures),
    }
