"""Benchmark: detection quality against annotated loops in real agent runs.

Runs every detection profile as an agent sees it (the ladder applied), the rules of
OpenHands, Gemini CLI and Roo Code (reference profiles), the default profile with
the Layer 2 confirmation of the deterministic analyst, and every registered
detector alone, over a dataset directory (``events/``, ``loops.jsonl``,
``labels.csv``), and prints per profile, overall and per source:

recall (looping runs warned inside a loop), timely (by ``evident + 2``), false
alarms (loop-free runs warned), precision (warnings inside a loop), warnings per 100
actions on loop-free runs and the median delay from ``evident`` to the first hit
(definitions in ``loopwarden/evaluation/scoring.py``). Then the runs the default
misses and the loop-free runs it warns, and, as a secondary view, the share of runs
warned by task outcome.

Then the **leave-one-kind-out** headline (``benchmarks/detection_loko.py``: the gate
trained on nine kinds and scored on the tenth, without and with the signals); with
``--grid``, the older leave-one-source-out table (``loopwarden/evaluation/tuning.py``): for each
source, every setting the default profile is tuned by (``tuning.GRID``: repeat counts
and similarity cut-offs) is chosen on the *other* sources and scored on this one; the
headline is the mean and the worst source, beside the goals. The settings chosen on
all sources are printed too (the default profile's values come from there). About
five minutes here (``--no-loso`` skips it). JSON goes to
``benchmarks/results/detection_quality.json``.

    .venv/bin/python benchmarks/detection_quality.py                  # ../shared dataset
    .venv/bin/python benchmarks/detection_quality.py --dir DIR --set detection.outcome_repeats=4
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import click
import detection_loko

from loopwarden.agents.analyst.heuristics import semantic_spin
from loopwarden.agents.spin.detector import REGISTRY
from loopwarden.evaluation import tuning
from loopwarden.evaluation.dataset import SIGNALS, Run, load
from loopwarden.evaluation.replay import Shown, warnings_of
from loopwarden.evaluation.scoring import Figures, score
from loopwarden.settings import Settings
from loopwarden.settings.overrides import with_overrides

RESULTS = Path(__file__).parent / "results"
DEFAULT_DIR = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "trajectories"
PROFILES = ("gated", "loops", "seed", "patterns", "openhands", "gemini-cli", "roo-code")
GOALS = {"recall": 0.90, "timely": 0.75, "false_alarms": 0.05, "precision": 0.60}


def dataset_dir(given: str | None) -> Path:
    """``--dir``, else ``$LOOPWARDEN_TRAJECTORIES``, else ``../shared/datasets/trajectories``."""
    path = Path(given or os.environ.get("LOOPWARDEN_TRAJECTORIES") or DEFAULT_DIR)
    if not (path / "loops.jsonl").exists():
        raise SystemExit(f"no loops.jsonl under {path}: pass --dir or set LOOPWARDEN_TRAJECTORIES")
    return path


def shown_by(settings: Settings, runs: list[Run], label: str) -> dict[str, list[Shown]]:
    """Every run through the monitor, with a progress bar on a terminal."""
    with click.progressbar(
        length=len(runs), label=f"{label:<22}", file=sys.stderr, hidden=not sys.stderr.isatty()
    ) as bar:
        return warnings_of(settings, runs, progress=lambda _run: bar.update(1))


def confirmed(
    runs: list[Run], shown: dict[str, list[Shown]], settings: Settings
) -> dict[str, list[Shown]]:
    """Only the warnings the deterministic analyst confirms (Layer 2 on the recent
    actions, as the monitor's semantic check request carries them)."""
    keep = settings.detection.logic_spin_threshold
    similarity = settings.analyst.param_similarity_threshold
    out: dict[str, list[Shown]] = {}
    for run in runs:
        mine = []
        for item in shown.get(run.loop_id, []):
            recent = run.events[max(0, item.position + 1 - keep) : item.position + 1]
            if semantic_spin(recent, similarity=similarity).is_spinning:
                mine.append(item)
        out[run.loop_id] = mine
    return out


def positions(shown: dict[str, list[Shown]], kinds: set[str] | None = None) -> dict[str, list[int]]:
    return {
        loop_id: [s.position for s in items if kinds is None or s.kind in kinds]
        for loop_id, items in shown.items()
    }


def figures_by_source(runs: list[Run], where: dict[str, list[int]]) -> dict[str, Figures]:
    """Overall and per source."""
    sources = sorted({run.source for run in runs})
    out = {"all": score(runs, where)}
    for source in sources:
        out[source] = score([r for r in runs if r.source == source], where)
    return out


def pct(value: float | None) -> str:
    return "    -" if value is None else f"{100 * value:5.1f}"


def row(name: str, f: Figures) -> str:
    delay = "-" if f.median_delay is None else f"{f.median_delay:+.1f}"
    return (
        f"{name:<30}{pct(f.recall):>8}{pct(f.timely):>8}{pct(f.false_alarms):>8}"
        f"{pct(f.precision):>8}{f.per_100:>8.2f}{delay:>7}{f.warnings:>7}"
    )


HEAD = (
    f"{'':<30}{'recall':>8}{'timely':>8}{'false':>8}{'prec.':>8}{'/100':>8}{'delay':>7}"
    f"{'warns':>7}\n{'profile / detector':<30}{'%':>8}{'%':>8}{'alarm %':>8}{'%':>8}"
    f"{'free':>8}{'':>7}{'':>7}"
)


def explain(runs: list[Run], shown: dict[str, list[Shown]]) -> list[str]:
    """The looping runs missed and the loop-free runs warned, with positions and actions."""
    lines = []
    for run in runs:
        mine = shown.get(run.loop_id, [])
        at = [s.position for s in mine]
        if run.looping and not any(seg.hit(p) for seg in run.segments for p in at):
            segs = ", ".join(
                f"{s.kind} {s.start}-{s.end} (evident {s.evident})" for s in run.segments
            )
            lines.append(f"missed  {run.loop_id}: {segs}; warned at {at or 'none'}")
        if not run.looping and mine:
            first = mine[0]
            event = run.events[run.positions.index(first.position)]
            name = str(event.get("action_name") or event.get("result") or "")[:70]
            lines.append(
                f"wrongly {run.loop_id}: {len(mine)} warning(s), first at {first.position} "
                f"({first.kind}) on {name!r}"
            )
    return lines


def by_outcome(runs: list[Run], where: dict[str, list[int]]) -> dict[str, float]:
    """Secondary view: share of runs warned, by task outcome."""
    groups: dict[str, list[bool]] = defaultdict(list)
    for run in runs:
        if run.outcome:
            groups[run.outcome].append(bool(where.get(run.loop_id)))
    return {k: sum(v) / len(v) for k, v in sorted(groups.items())}


def loso_report(runs: list[Run], base: Settings) -> dict[str, Any]:
    """Print and return the leave-one-source-out table of the default profile."""
    sources = sorted({r.source for r in runs})
    names = list(tuning.GRID)

    def positions_of(choice: tuning.Choice) -> dict[str, list[int]]:
        settings = with_overrides(base, [f"detection.{k}={v}" for k, v in choice])
        return positions(warnings_of(settings, runs))

    evaluator = tuning.Evaluator(runs, positions_of)
    start = tuple((name, getattr(base.detection, name)) for name in names)
    total = len(sources) + 1
    with click.progressbar(
        length=total,
        label=f"{'tuning (folds)':<22}",
        file=sys.stderr,
        hidden=not sys.stderr.isatty(),
    ) as bar:
        folds = tuning.leave_one_source_out(
            evaluator, sources, start, progress=lambda _source: bar.update(1)
        )
        everywhere = tuning.choose(evaluator, sources, start)
        bar.update(1)
    print(f"\nleave-one-source-out: {base.detection.profile}, tuned on the other sources\n{HEAD}")
    for source, (_choice, figures) in folds.items():
        print(row(source, figures))
    outside = tuning.summary([f for _c, f in folds.values()])
    print(
        f"{'mean over sources':<30}{pct(outside['recall_mean']):>8}"
        f"{pct(outside['timely_mean']):>8}{pct(outside['false_alarms_mean']):>8}"
        f"{pct(outside['precision_mean']):>8}"
    )
    print(
        f"{'worst source':<30}{pct(outside['recall_worst']):>8}"
        f"{pct(outside['timely_worst']):>8}{pct(outside['false_alarms_worst']):>8}"
        f"{pct(outside['precision_worst']):>8}"
    )
    print(
        f"{'goal (mean)':<30}{pct(GOALS['recall']):>8}{pct(GOALS['timely']):>8}"
        f"{pct(GOALS['false_alarms']):>8}{pct(GOALS['precision']):>8}"
        f"   (no source below 75 % recall or above 10 % false alarms)"
    )
    print("\nsettings chosen per fold (held-out source: the choice made without it)")
    for source, (choice, _f) in folds.items():
        print(f"{source:<18}" + " ".join(f"{k}={v}" for k, v in choice))
    print(f"{'all sources':<18}" + " ".join(f"{k}={v}" for k, v in everywhere))
    differs = {k: v for k, v in everywhere if getattr(base.detection, k) != v}
    print(f"the defaults {'differ: ' + str(differs) if differs else 'are the all-sources choice'}")
    in_sample = evaluator.figures(everywhere, sources)
    return {
        "grid": {k: list(v) for k, v in tuning.GRID.items()},
        "folds": {s: {"choice": dict(c), "figures": f.as_dict()} for s, (c, f) in folds.items()},
        "summary": outside,
        "all_sources_choice": dict(everywhere),
        "all_sources_in_sample": {s: f.as_dict() for s, f in in_sample.items()},
    }


SIGNAL_SETS = {
    "none": (),
    "rejected": ("rejected",),
    "counterpart": ("counterpart",),
    "both": SIGNALS,
}


def side_by_side(root: Path, base: Settings) -> None:
    """The leave-one-source-out summary of the default profile for each set of signals
    (what a user whose integration cannot publish a signal gets), to
    ``results/detection_signals.json``."""
    out: dict[str, Any] = {}
    for label, signals in SIGNAL_SETS.items():
        print(f"\n=== signals: {label}")
        out[label] = loso_report(load(root, signals), base)
    print(
        f"\n{'signals':<14}{'recall':>8}{'worst':>8}{'timely':>8}{'false':>8}{'worst':>8}{'prec.':>8}"
    )
    for label, report in out.items():
        s = report["summary"]
        print(
            f"{label:<14}{pct(s['recall_mean']):>8}{pct(s['recall_worst']):>8}"
            f"{pct(s['timely_mean']):>8}{pct(s['false_alarms_mean']):>8}"
            f"{pct(s['false_alarms_worst']):>8}{pct(s['precision_mean']):>8}"
        )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "detection_signals.json").write_text(json.dumps(out, indent=2, default=str))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", help="dataset directory (events/, loops.jsonl, labels.csv)")
    parser.add_argument("--set", action="append", default=[], help="NAME=VALUE (repeatable)")
    parser.add_argument("--profile", action="append", help="profiles to show (default: all)")
    parser.add_argument("--no-detectors", action="store_true", help="skip the per-detector rows")
    parser.add_argument(
        "--no-loso", action="store_true", help="skip the leave-one-kind-out headline"
    )
    parser.add_argument(
        "--grid",
        action="store_true",
        help="also the loops profile's settings grid tuned leave-one-source-out (slow)",
    )
    parser.add_argument(
        "--signals",
        default=",".join(SIGNALS),
        help=f"optional signals the runs carry, comma-separated, from {', '.join(SIGNALS)} "
        "('' for none; default: all)",
    )
    parser.add_argument(
        "--side-by-side",
        action="store_true",
        help="only the leave-one-source-out summary with and without each signal",
    )
    args = parser.parse_args()
    unknown = [name for name in args.profile or () if name not in PROFILES]
    if unknown:
        parser.exit(2, f"unknown profile {unknown[0]!r}: choose from {', '.join(PROFILES)}\n")
    root = dataset_dir(args.dir)
    base = with_overrides(Settings(), args.set)
    if args.side_by_side:
        side_by_side(root, base)
        return
    signals = [name for name in args.signals.split(",") if name]
    runs = load(root, signals)
    looping = sum(run.looping for run in runs)
    print(
        f"{root}: {len(runs)} runs ({looping} looping, {len(runs) - looping} loop-free), "
        f"{sum(r.actions for r in runs)} actions; sources: "
        + ", ".join(sorted({r.source for r in runs}))
        + f"; signals: {', '.join(signals) or 'none'}"
    )
    report: dict[str, Any] = {
        "dataset": str(root),
        "signals": signals,
        "goals": GOALS,
        "profiles": {},
        "detectors": {},
    }
    per_source: dict[str, dict[str, Figures]] = {}
    outcome_rows: dict[str, dict[str, float]] = {}
    default_shown: dict[str, list[Shown]] = {}
    print("\n" + HEAD)
    for profile in args.profile or PROFILES:
        settings = with_overrides(base, [f"detection.profile={profile}"])
        shown = shown_by(settings, runs, profile)
        where = positions(shown)
        figures = figures_by_source(runs, where)
        per_source[profile] = figures
        outcome_rows[profile] = by_outcome(runs, where)
        print(row(profile, figures["all"]))
        report["profiles"][profile] = {k: v.as_dict() for k, v in figures.items()}
        if profile == base.detection.profile:
            default_shown = shown
            cascade = confirmed(runs, shown, settings)
            name = f"{profile} + Layer 2 (analyst)"
            figures = figures_by_source(runs, positions(cascade))
            per_source[name] = figures
            print(row(name, figures["all"]))
            report["profiles"][name] = {k: v.as_dict() for k, v in figures.items()}
    if not args.no_detectors:
        every = with_overrides(base, ["detection.ladder=false"])
        every = every.model_copy(
            update={"detection": every.detection.model_copy(update={"detectors": tuple(REGISTRY)})}
        )
        shown = shown_by(every, runs, "every detector")
        print(f"\n{'each detector alone, every finding':<30}")
        for kind in sorted({cls.kind for cls in REGISTRY.values()}):
            figures = figures_by_source(runs, positions(shown, {kind}))
            print(row(kind, figures["all"]))
            report["detectors"][kind] = {k: v.as_dict() for k, v in figures.items()}
    sources = sorted({r.source for r in runs})
    for source in sources:
        print(f"\n{source}\n{HEAD}")
        for name, figures in per_source.items():
            print(row(name, figures[source]))
    print("\nsecondary view: share of runs warned by task outcome (labels.csv)")
    for name, shares in outcome_rows.items():
        print(f"{name:<30}" + "".join(f"{k} {100 * v:5.1f}%  " for k, v in shares.items()))
    report["by_outcome"] = outcome_rows
    if default_shown:
        lines = explain(runs, default_shown)
        print(f"\n{base.detection.profile}: what it misses and where it warns wrongly")
        print("\n".join(lines) or "nothing")
        report["explained"] = lines
    if args.grid:
        report["leave_one_source_out"] = loso_report(
            runs, with_overrides(base, ["detection.profile=loops"])
        )
    if not args.no_loso:
        print("\nthe headline: leave-one-kind-out (the figures above are in sample)")
        report["leave_one_kind_out"] = detection_loko.run(root, os.cpu_count() or 1)
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "detection_quality.json"
    out.write_text(json.dumps(report, indent=2, default=str))
    print(f"\nwritten to {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
