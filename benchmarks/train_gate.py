"""Train the shipped gate model on every kind of the dataset (development time).

Runs the monitor over the dataset with and without the optional signals, collects
every step a rule proposed on (``loopwarden/evaluation/gate_training.py``), fits the
boosted trees on all kinds, chooses the threshold there and writes
``agents/spin/gate_model.json`` with what it was trained on. Needs the ``train``
extra (scikit-learn). The held-out figures are ``benchmarks/detection_loko.py``'s.

    .venv/bin/python benchmarks/train_gate.py                # ../shared dataset
    .venv/bin/python benchmarks/train_gate.py --out /tmp/gate.json
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

import sklearn

from loopwarden.agents.spin.gate import SHIPPED
from loopwarden.evaluation import gate_training, kind_out
from loopwarden.schemas import codec
from loopwarden.settings import Settings

DEFAULT_DIR = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "trajectories"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", help="dataset directory (events/, loops.jsonl)")
    parser.add_argument("--out", default=str(SHIPPED), help="where to write the model")
    args = parser.parse_args()
    root = Path(args.dir or os.environ.get("LOOPWARDEN_TRAJECTORIES") or DEFAULT_DIR)
    if not (root / "loops.jsonl").exists():
        raise SystemExit(f"no loops.jsonl under {root}: pass --dir or set LOOPWARDEN_TRAJECTORIES")
    base = Settings()
    items = kind_out.renditions(root, base, progress=lambda label: print(label, file=sys.stderr))
    kinds = kind_out.kinds_of(items)
    model = gate_training.trained(items, kinds, base.detection)
    data = gate_training.artifact(
        model,
        dataset=root.name,
        runs=len(items[0].runs),
        signals=list(kind_out.SIGNAL_SETTINGS),
        scikit_learn=sklearn.__version__,
        trained_at=datetime.now(UTC).strftime("%Y-%m-%d"),
    )
    data["trained_on"]["id"] = "gate-" + hashlib.sha256(codec.dumps(data["trees"])).hexdigest()[:12]
    Path(args.out).write_bytes(codec.dumps(data) + b"\n")
    print(
        f"{len(model.trees)} trees over {len(model.features)} features, threshold "
        f"{model.threshold}, trained on {', '.join(kinds)}: {args.out}"
    )


if __name__ == "__main__":
    main()
