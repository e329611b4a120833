"""Training the calibrated gate on annotated runs, and judging it leave-one-kind-out.

Development time only: training needs scikit-learn (the ``train`` extra); the worker
reads the result, a small JSON artifact (:mod:`loopwarden.agents.spin.gate`).

1. :func:`steps_of` runs the monitor over the runs with the gate letting everything
   through, and collects every step a rule proposed on, with its model input (the
   features do not depend on the model's weights, so this is done once).
2. :func:`fit` trains small gradient-boosted trees (scikit-learn, monotone in the
   repetition and novelty features) on the steps of some kinds that no trusted rule
   proposed on: a step is positive when it lies in ``[start, end + 2]`` of an
   annotated loop; every kind weighs the same however many steps it has (each loop
   and each healthy run alike), and both renditions of a run (with and without the
   optional signals) count half each, so one model serves integrations that publish
   them and those that do not.
3. :func:`choose_threshold` picks the threshold that maximises the tuning objective
   (:func:`loopwarden.evaluation.tuning.objective`: mean recall and timely recall less
   twice the false alarms, per kind alike) on the training kinds, with the ladder
   applied exactly as the monitor applies it (:func:`shown_positions`).
4. :func:`leave_one_kind_out`: for each kind, 2 and 3 on the other nine, scored on it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from loopwarden.agents.spin.gate import PROPOSED, GateModel, Tree, load
from loopwarden.agents.spin.ladder import Ladder
from loopwarden.agents.spin.step_features import MONOTONE
from loopwarden.evaluation.dataset import Run, heard
from loopwarden.evaluation.replay import Scored, warnings_of
from loopwarden.evaluation.scoring import Figures, score
from loopwarden.evaluation.tuning import objective
from loopwarden.settings import DetectionSettings, Settings
from loopwarden.settings.overrides import with_overrides

THRESHOLDS = tuple(round(0.05 + 0.025 * i, 3) for i in range(37))
"""Candidate thresholds, 0.05 to 0.95."""
TRUSTED = (
    "repeated_outcome",
    "repeated_message",
    "restated_message",
    "code_edit_spin",
    "outcome_cycle",
)
"""The rules shown whatever the score: the loops profile's (tuned leave-one-source-out
before) and the cycle of outcomes, each precise on every kind alone."""
DEPTH, TREES, RATE, MIN_LEAF, L2 = 2, 60, 0.1, 20, 1.0
"""The boosted trees: depth, count, learning rate, least steps per leaf, L2 penalty."""

Steps = dict[str, list[Scored]]
"""Per run: the steps the gate scored."""


@dataclass(frozen=True, slots=True)
class Rendition:
    """The runs as loaded with one set of signals, and their scored steps."""

    label: str
    runs: list[Run]
    steps: Steps


def steps_of(
    runs: Sequence[Run], base: Settings, progress: Callable[[Run], None] | None = None
) -> Steps:
    """Every step a rule proposed on, with its model input (module docstring, 1)."""
    settings = with_overrides(base, ["detection.profile=gated", "detection.gate_threshold=0"])
    tap: Steps = {}
    warnings_of(settings, runs, progress=progress, tap=tap)
    return tap


def labelled(run: Run, step: Scored) -> bool:
    return any(segment.hit(step.position) for segment in run.segments)


def segment_of(run: Run, step: Scored) -> int:
    """The index of the loop segment the step lies in, -1 when none."""
    return next((i for i, s in enumerate(run.segments) if s.hit(step.position)), -1)


def fit(renditions: Sequence[Rendition], kinds: Iterable[str], template: GateModel) -> GateModel:
    """Boosted trees on the steps of ``kinds`` (module docstring, 2), monotone in the
    features :data:`~loopwarden.agents.spin.step_features.MONOTONE` names (more
    repetition never lowers the score, more novelty never raises it); the threshold
    is set by :func:`choose_threshold` afterwards (here 0.5)."""
    import numpy as np
    from sklearn.ensemble import HistGradientBoostingClassifier

    wanted = set(kinds)
    rows: list[list[float]] = []
    labels: list[int] = []
    weights: list[float] = []
    for rendition in renditions:
        per_kind: dict[str, dict[tuple[str, int], list[tuple[list[float], int]]]] = {}
        for run in rendition.runs:
            if run.source not in wanted:
                continue
            groups = per_kind.setdefault(run.source, {})
            for step in rendition.steps.get(run.loop_id, ()):
                if template.trusted_proposed(step.x):
                    continue  # shown whatever the score
                group = segment_of(run, step)
                groups.setdefault((run.loop_id, group), []).append((step.x, int(group >= 0)))
        for groups in per_kind.values():
            for items in groups.values():
                for x, y in items:
                    rows.append(x)
                    labels.append(y)
                    weights.append(1.0 / (len(items) * len(groups) * len(renditions)))
    w = np.asarray(weights)
    model = HistGradientBoostingClassifier(
        max_depth=DEPTH,
        max_iter=TREES,
        learning_rate=RATE,
        min_samples_leaf=MIN_LEAF,
        l2_regularization=L2,
        monotonic_cst=[monotone(name) for name in template.features],
        early_stopping=False,
        random_state=0,
    )
    model.fit(np.asarray(rows), np.asarray(labels), sample_weight=w * len(rows) / w.sum())
    trees = tuple(_tree(predictors[0].nodes) for predictors in model._predictors)
    return GateModel(
        template.features,
        trees,
        round(float(np.ravel(model._baseline_prediction)[0]), 9),
        1.0,
        0.5,
        {"kinds": sorted(wanted), "steps": len(rows)},
        template.trusted,
    )


def monotone(feature: str) -> int:
    """+1, -1 or 0: the direction the score must move with ``feature``."""
    if feature.startswith(PROPOSED) or feature == "proposals":
        return 1
    return MONOTONE.get(feature, 0)


def _tree(nodes: Any) -> Tree:
    """A fitted scikit-learn histogram tree as the gate's flat arrays. Its leaves hold
    the shrunk outputs; every inner node gets the count-weighted mean of its leaves, so
    the contributions along a path add up to the leaf."""
    count = len(nodes)
    value = [0.0] * count
    for node in reversed(range(count)):  # children come after their parent
        if nodes[node]["is_leaf"]:
            value[node] = float(nodes[node]["value"])
        else:
            left, right = int(nodes[node]["left"]), int(nodes[node]["right"])
            n_left, n_right = int(nodes[left]["count"]), int(nodes[right]["count"])
            value[node] = (n_left * value[left] + n_right * value[right]) / (n_left + n_right)
    return Tree(
        tuple(-1 if n["is_leaf"] else int(n["feature_idx"]) for n in nodes),
        tuple(0.0 if n["is_leaf"] else float(n["num_threshold"]) for n in nodes),
        tuple(-1 if n["is_leaf"] else int(n["left"]) for n in nodes),
        tuple(-1 if n["is_leaf"] else int(n["right"]) for n in nodes),
        tuple(round(v, 9) for v in value),
    )


def shown_positions(
    run: Run, steps: Sequence[Scored], model: GateModel, threshold: float, cfg: DetectionSettings
) -> list[int]:
    """The positions of the warnings the agent is shown: the steps the gate passes, through
    the ladder (one warning per ladder step of an episode), as the monitor shows them."""
    passed = {step.line for step in steps if model.passes(step.x, threshold)}
    ladder = Ladder()
    shown = []
    where = run.positions
    for line, event in enumerate(run.events):
        if heard(event):
            continue
        if ladder.step(line in passed, cfg) is not None:
            shown.append(where[line])
    return shown


def figures(
    rendition: Rendition,
    model: GateModel,
    threshold: float,
    kinds: Iterable[str],
    cfg: DetectionSettings,
) -> dict[str, Figures]:
    """Per kind, the figures of ``model`` at ``threshold``."""
    out = {}
    for kind in kinds:
        runs = [run for run in rendition.runs if run.source == kind]
        where = {
            run.loop_id: shown_positions(
                run, rendition.steps.get(run.loop_id, []), model, threshold, cfg
            )
            for run in runs
        }
        out[kind] = score(runs, where)
    return out


def choose_threshold(
    renditions: Sequence[Rendition],
    model: GateModel,
    kinds: Sequence[str],
    cfg: DetectionSettings,
) -> float:
    """The threshold with the best mean objective over ``renditions`` on ``kinds``."""
    best, chosen = float("-inf"), 0.5
    for threshold in THRESHOLDS:
        gain = sum(objective(figures(r, model, threshold, kinds, cfg)) for r in renditions) / len(
            renditions
        )
        if gain > best + 1e-9:
            best, chosen = gain, threshold
    return chosen


def trained(
    renditions: Sequence[Rendition], kinds: Sequence[str], cfg: DetectionSettings
) -> GateModel:
    """Fitted on ``kinds`` with its threshold chosen there."""
    model = fit(renditions, kinds, replace(load(), trusted=TRUSTED))
    threshold = choose_threshold(renditions, model, kinds, cfg)
    return replace(model, threshold=threshold)


def leave_one_kind_out(
    renditions: Sequence[Rendition],
    cfg: DetectionSettings,
    progress: Callable[[str], None] | None = None,
) -> dict[str, GateModel]:
    """Per kind: the model trained, and thresholded, on the other kinds."""
    kinds = sorted({run.source for run in renditions[0].runs})
    out = {}
    for held_out in kinds:
        out[held_out] = trained(renditions, [k for k in kinds if k != held_out], cfg)
        if progress is not None:
            progress(held_out)
    return out


def fold_figures(
    rendition: Rendition, folds: Mapping[str, GateModel], cfg: DetectionSettings
) -> dict[str, Figures]:
    """Per kind, the figures of the model that did not see it."""
    return {
        kind: figures(rendition, model, model.threshold, [kind], cfg)[kind]
        for kind, model in folds.items()
    }


def artifact(model: GateModel, **trained_on: Any) -> dict[str, Any]:
    """The JSON the worker reads, with what it was trained on."""
    return replace(model, trained_on={**model.trained_on, **trained_on}).to_json()
