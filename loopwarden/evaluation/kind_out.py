"""The headline of detection: leave-one-kind-out, with and without the optional signals.

One kind of agent is one source folder of the dataset. For each kind, the gate is
trained and its threshold chosen on the other nine (:mod:`.gate_training`) and the
figures are those on the kind left out; beside them, the ``loops`` profile (rules
alone, no gate) at its default settings. Every held-out figure of the gate is
checked against the real monitor: the fold's model is written as an artifact and
the runs of its kind go through :class:`~loopwarden.agents.monitor.records.RecordProcessor`
with it, which must show the warnings the simulation counted (else
:class:`VerificationError`). Folds are trained in parallel processes; the events
are loaded once per signal setting.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loopwarden.agents.spin.gate import GateModel
from loopwarden.evaluation import gate_training as training
from loopwarden.evaluation.dataset import SIGNALS, load
from loopwarden.evaluation.replay import warnings_of
from loopwarden.evaluation.scoring import Figures, score
from loopwarden.evaluation.tuning import summary
from loopwarden.schemas import codec
from loopwarden.settings import Settings
from loopwarden.settings.overrides import with_overrides

SIGNAL_SETTINGS: dict[str, tuple[str, ...]] = {"none": (), "both": SIGNALS}
"""The two settings every headline figure is given for."""


class VerificationError(AssertionError):
    """The real monitor showed other warnings than the fold's simulation counted."""


@dataclass(frozen=True, slots=True)
class Headline:
    """Per signal setting, per kind: the gate's held-out figures and the rules' alone."""

    gated: dict[str, dict[str, Figures]]
    loops: dict[str, dict[str, Figures]]
    folds: dict[str, GateModel]

    def as_dict(self) -> dict[str, Any]:
        def table(figures: dict[str, dict[str, Figures]]) -> dict[str, Any]:
            return {
                label: {
                    "kinds": {kind: f.as_dict() for kind, f in per_kind.items()},
                    "summary": summary(list(per_kind.values())),
                    "pooled": pooled(per_kind).as_dict(),
                }
                for label, per_kind in figures.items()
            }

        return {
            "gated": table(self.gated),
            "loops": table(self.loops),
            "thresholds": {kind: model.threshold for kind, model in self.folds.items()},
        }


def pooled(per_kind: dict[str, Figures]) -> Figures:
    """The kinds' figures pooled over runs (counts added, not rates averaged)."""
    figures = list(per_kind.values())
    looping = sum(f.looping_runs for f in figures)
    free = sum(f.loop_free_runs for f in figures)
    warnings = sum(f.warnings for f in figures)
    hits = sum((f.precision or 0.0) * f.warnings for f in figures)
    return Figures(
        looping_runs=looping,
        loop_free_runs=free,
        recall=sum(f.recall * f.looping_runs for f in figures) / looping if looping else 0.0,
        timely=sum(f.timely * f.looping_runs for f in figures) / looping if looping else 0.0,
        false_alarms=sum(f.false_alarms * f.loop_free_runs for f in figures) / free
        if free
        else 0.0,
        precision=hits / warnings if warnings else None,
        per_100=0.0,
        median_delay=None,
        warnings=warnings,
    )


_RENDITIONS: list[training.Rendition] = []


def _fold(held_out: str) -> tuple[str, GateModel]:
    kinds = kinds_of(_RENDITIONS)
    cfg = Settings().detection
    return held_out, training.trained(_RENDITIONS, [k for k in kinds if k != held_out], cfg)


def renditions(
    root: Path, base: Settings, progress: Callable[[str], None] | None = None
) -> list[training.Rendition]:
    """The runs with and without the signals, and every step the rules proposed on."""
    out = []
    for label, signals in SIGNAL_SETTINGS.items():
        runs = load(root, signals)
        out.append(training.Rendition(label, runs, training.steps_of(runs, base)))
        if progress is not None:
            progress(label)
    return out


def folds_of(
    items: list[training.Rendition], jobs: int, progress: Callable[[str], None] | None = None
) -> dict[str, GateModel]:
    """Per kind, the gate trained on the other kinds (``jobs`` processes)."""
    kinds = kinds_of(items)
    _RENDITIONS[:] = items
    out: dict[str, GateModel] = {}
    if jobs <= 1:
        results = map(_fold, kinds)
        for kind, model in results:
            out[kind] = model
            if progress is not None:
                progress(kind)
        return out
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for kind, model in pool.map(_fold, kinds):
            out[kind] = model
            if progress is not None:
                progress(kind)
    return dict(sorted(out.items()))


def verify(
    rendition: training.Rendition,
    folds: dict[str, GateModel],
    base: Settings,
    simulated: dict[str, list[int]],
) -> None:
    """Run each kind's runs through the real monitor with its fold's model: the shown
    positions must be the simulated ones."""
    with tempfile.TemporaryDirectory() as tmp:
        for kind, model in folds.items():
            path = Path(tmp) / f"{kind}.json"
            path.write_bytes(codec.dumps(model.to_json()))
            settings = with_overrides(
                base, ["detection.profile=gated", f"detection.gate_model={path}"]
            )
            runs = [run for run in rendition.runs if run.source == kind]
            shown = warnings_of(settings, runs)
            for run in runs:
                real = sorted(s.position for s in shown[run.loop_id])
                if real != sorted(simulated[run.loop_id]):
                    raise VerificationError(
                        f"{run.loop_id} ({rendition.label}): the monitor warned at {real}, "
                        f"the simulation at {sorted(simulated[run.loop_id])}"
                    )


def headline(
    items: list[training.Rendition],
    base: Settings,
    jobs: int = os.cpu_count() or 1,
    progress: Callable[[str], None] | None = None,
) -> Headline:
    """Leave-one-kind-out figures of the gate (verified) and of the rules alone."""
    cfg = base.detection
    folds = folds_of(items, jobs, progress)
    gated: dict[str, dict[str, Figures]] = {}
    loops: dict[str, dict[str, Figures]] = {}
    rules = with_overrides(base, ["detection.profile=loops"])
    for rendition in items:
        simulated = {}
        for run in rendition.runs:
            model = folds[run.source]
            steps = rendition.steps.get(run.loop_id, [])
            simulated[run.loop_id] = training.shown_positions(
                run, steps, model, model.threshold, cfg
            )
        verify(rendition, folds, base, simulated)
        shown = warnings_of(rules, rendition.runs)
        where = {k: [s.position for s in v] for k, v in shown.items()}
        gated[rendition.label] = {}
        loops[rendition.label] = {}
        for kind in folds:
            runs = [run for run in rendition.runs if run.source == kind]
            gated[rendition.label][kind] = score(runs, simulated)
            loops[rendition.label][kind] = score(runs, where)
        if progress is not None:
            progress(f"verified {rendition.label}")
    return Headline(gated, loops, folds)


def kinds_of(items: Sequence[training.Rendition]) -> list[str]:
    """The kinds of agent (sources) the runs hold, sorted."""
    return sorted({run.source for run in items[0].runs})
