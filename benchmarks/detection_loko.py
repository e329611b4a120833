"""Benchmark: detection leave-one-kind-out, the headline figure.

For each of the dataset's kinds of agent (source folders), the gate is trained and
thresholded on the other kinds and scored on this one, without the optional signals
and with both (``rejected``, ``counterpart``) side by side; beside it the ``loops``
profile (rules alone, at its defaults). Each held-out figure is checked against the
real monitor running the fold's model (``loopwarden/evaluation/kind_out.py``). Prints
per kind recall / timely / false alarms / precision (%), the mean and the worst kind
and the pooled figures, against the goals; JSON to
``benchmarks/results/detection_loko.json``. About four minutes on two cores.

    .venv/bin/python benchmarks/detection_loko.py                # ../shared dataset
    .venv/bin/python benchmarks/detection_loko.py --dir DIR --jobs 2
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import click

from loopwarden.evaluation import kind_out
from loopwarden.evaluation.scoring import Figures
from loopwarden.evaluation.tuning import summary
from loopwarden.settings import Settings

RESULTS = Path(__file__).parent / "results"
DEFAULT_DIR = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "trajectories"
GOALS = {
    "recall_mean": 0.90,
    "recall_kind": 0.75,
    "false_alarms_kind": 0.10,
    "false_alarms_pooled": 0.05,
    "precision_mean": 0.60,
}


def pct(value: float | None) -> str:
    return "    -" if value is None else f"{100 * value:5.1f}"


def cells(f: Figures) -> str:
    return f"{pct(f.recall)} {pct(f.timely)} {pct(f.false_alarms)} {pct(f.precision)}"


def table(headline: kind_out.Headline) -> list[str]:
    """The per-kind table: gate and rules alone, without and with the signals."""
    labels = list(headline.gated)
    head = "".join(f" | {'gated, ' + label:<23} | {'loops, ' + label:<23}" for label in labels)
    lines = [
        f"{'kind':<16}{'loop/free':>10}{'thr':>6}{head}",
        f"{'':<32}" + " | rec.  time  f.a.  prec" * (2 * len(labels)),
    ]
    for kind, model in headline.folds.items():
        some = headline.gated[labels[0]][kind]
        row = f"{kind:<16}{some.looping_runs:>4}/{some.loop_free_runs:<5}{model.threshold:>6.3f}"
        for label in labels:
            row += f" | {cells(headline.gated[label][kind])} | {cells(headline.loops[label][kind])}"
        lines.append(row)
    for name in ("mean", "worst", "pooled"):
        row = f"{name:<32}"
        for label in labels:
            for per_kind in (headline.gated[label], headline.loops[label]):
                row += " | " + aggregate(per_kind, name)
        lines.append(row)
    return lines


def aggregate(per_kind: dict[str, Figures], name: str) -> str:
    if name == "pooled":
        return cells(kind_out.pooled(per_kind))
    s = summary(list(per_kind.values()))
    if name == "mean":
        keys = ("recall_mean", "timely_mean", "false_alarms_mean", "precision_mean")
    else:
        keys = ("recall_worst", "timely_worst", "false_alarms_worst", "precision_worst")
    return " ".join(pct(s[k]) for k in keys)


def verdict(per_kind: dict[str, Figures]) -> dict[str, bool]:
    """Each goal of issue 69, met or not."""
    s = summary(list(per_kind.values()))
    return {
        "recall_mean": s["recall_mean"] >= GOALS["recall_mean"],
        "recall_kind": s["recall_worst"] >= GOALS["recall_kind"],
        "false_alarms_kind": s["false_alarms_worst"] <= GOALS["false_alarms_kind"],
        "false_alarms_pooled": kind_out.pooled(per_kind).false_alarms
        <= GOALS["false_alarms_pooled"],
        "precision_mean": s["precision_mean"] >= GOALS["precision_mean"],
    }


def run(root: Path, jobs: int) -> dict[str, Any]:
    """Print the headline table and return it as JSON-ready data."""
    started = time.monotonic()
    base = Settings()
    steps = len(kind_out.SIGNAL_SETTINGS) * 2 + 10
    with click.progressbar(
        length=steps,
        label="leave-one-kind-out",
        file=sys.stderr,
        hidden=not sys.stderr.isatty(),
    ) as bar:
        items = kind_out.renditions(root, base, progress=lambda _l: bar.update(1))
        headline = kind_out.headline(items, base, jobs, progress=lambda _k: bar.update(1))
    print(f"{root}: leave-one-kind-out (the gate trained and thresholded on the other kinds;")
    print("loops: the rules alone at their defaults); recall / timely / false alarms / precision %")
    print("\n".join(table(headline)))
    report = headline.as_dict()
    report["goals"] = GOALS
    report["met"] = {label: verdict(per_kind) for label, per_kind in headline.gated.items()}
    for label, met in report["met"].items():
        missed = [goal for goal, ok in met.items() if not ok]
        print(
            f"goals, gated, signals {label}: "
            + ("all met" if not missed else "not met: " + ", ".join(missed))
        )
    report["seconds"] = round(time.monotonic() - started, 1)
    print(f"verified against the monitor; {report['seconds']} s", file=sys.stderr)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", help="dataset directory (events/, loops.jsonl)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="fold processes")
    args = parser.parse_args()
    root = Path(args.dir or os.environ.get("LOOPWARDEN_TRAJECTORIES") or DEFAULT_DIR)
    if not (root / "loops.jsonl").exists():
        raise SystemExit(f"no loops.jsonl under {root}: pass --dir or set LOOPWARDEN_TRAJECTORIES")
    report = run(root, args.jobs)
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "detection_loko.json"
    out.write_text(json.dumps(report, indent=2, default=str))
    print(f"written to {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
