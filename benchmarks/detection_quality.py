"""Benchmark: detection quality on labelled real agent runs.

Runs every registered detector, and each profile as an agent would see it (the
ladder applied), over a directory of runs in loopwarden's event format, with the
deterministic analyst behind the Layer 2 semantic checks (the cascade), and
prints, per detector and per profile:

- the share of resolved and unresolved runs warned, and warnings per 100 events;
- the lift: unresolved rate ÷ resolved rate;
- the median iteration of the first warning;
- on failed runs annotated with a decisive step (Who&When): the share warned, and
  how often the first warning comes at or before that step.

The dataset's events carry the new signals in ``params``; they are mapped as the
dataset's README says: ``params.observation_sha1`` → ``result_digest``,
``params.edit_file`` → ``edit.file``, ``params.command`` the only argument compared,
``success_basis: none`` → unknown (counted as not failed). Labels never reach the
detectors. JSON goes to ``benchmarks/results/detection_quality.json``.

    .venv/bin/python benchmarks/detection_quality.py                # the shared dataset
    .venv/bin/python benchmarks/detection_quality.py --dir DIR --set detection.cycle_repeats=4
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson

from loopwarden.agents.analyst.heuristics import semantic_spin
from loopwarden.agents.monitor.records import RecordProcessor
from loopwarden.agents.spin.detector import REGISTRY
from loopwarden.schemas import codec
from loopwarden.schemas.dead_letter import SourcePosition
from loopwarden.settings import Settings
from loopwarden.settings.overrides import with_overrides

RESULTS = Path(__file__).parent / "results"
DEFAULT_DIR = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "trajectories"


def dataset_dir(given: str | None) -> Path:
    """``--dir``, else ``$LOOPWARDEN_TRAJECTORIES``, else ``../shared/datasets/trajectories``."""
    path = Path(given or os.environ.get("LOOPWARDEN_TRAJECTORIES") or DEFAULT_DIR)
    if not (path / "labels.csv").exists():
        raise SystemExit(f"no labels.csv under {path}: pass --dir or set LOOPWARDEN_TRAJECTORIES")
    return path


def mapped(line: dict[str, Any]) -> dict[str, Any]:
    """One dataset event with its signals moved onto the event's own fields."""
    params = line.get("params") or {}
    event = {k: v for k, v in line.items() if k != "params"}
    event["params"] = {"command": params["command"]} if "command" in params else {}
    if params.get("observation_sha1"):
        event["result_digest"] = params["observation_sha1"]
    if event.get("edit") and params.get("edit_file"):
        event["edit"] = {**event["edit"], "file": params["edit_file"]}
    if params.get("success_basis") == "none":
        event["success"] = True  # unknown: never counted as a failure
    return event


def load_runs(root: Path) -> tuple[dict[str, list[dict[str, Any]]], dict[str, dict[str, str]]]:
    """Events per loop (in file order) and the labels."""
    labels = {row["loop_id"]: row for row in csv.DictReader((root / "labels.csv").open())}
    runs: dict[str, list[dict[str, Any]]] = {}
    for path in sorted((root / "events").glob("*/*.jsonl")):
        events = [mapped(orjson.loads(line)) for line in path.open("rb") if line.strip()]
        if events:
            runs[events[0]["loop_id"]] = events
    return runs, labels


def envelope(event: dict[str, Any], index: int) -> bytes:
    """The flat event as the envelope ``detect`` would build (time = line number if absent)."""
    keys = {"event_id", "loop_id", "occurred_at"}
    env = {k: event[k] for k in keys if k in event}
    env.setdefault("occurred_at", float(index))
    env["payload"] = {k: v for k, v in event.items() if k not in keys}
    return codec.dumps(env)


def run_profile(
    settings: Settings, runs: dict[str, list[dict[str, Any]]]
) -> dict[str, list[dict[str, Any]]]:
    """Warnings per loop (plus the cascade's logic-spin verdicts as kind ``logic_spin``)."""
    processor = RecordProcessor.for_settings(settings)
    similarity = settings.analyst.param_similarity_threshold
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for loop_id, events in runs.items():
        states: dict[str, Any] = {}
        for index, event in enumerate(events):
            source = SourcePosition("dataset", 0, index)
            outcome = processor.process(envelope(event, index), None, source, states.get)
            states.update(outcome.states)
            out[loop_id].extend(outcome.warnings)
            for request in outcome.requests:
                if request["kind"] != "semantic_spin_check":
                    continue
                verdict = semantic_spin(request["recent_actions"], similarity=similarity)
                if verdict.is_spinning:
                    out[loop_id].append(
                        {
                            "kind": "logic_spin",
                            "iteration": request["recent_actions"][-1]["iteration"],
                        }
                    )
    return out


def group_of(label: dict[str, str]) -> str:
    return label["outcome"] if label["source"] == "mini-swe-agent" else "failed"


def stats(
    warnings: dict[str, list[dict[str, Any]]],
    runs: dict[str, list[dict[str, Any]]],
    labels: dict[str, dict[str, str]],
    kinds: set[str] | None,
) -> dict[str, Any]:
    """The figures for the warnings of ``kinds`` (None: every kind)."""
    groups: dict[str, dict[str, Any]] = defaultdict(
        lambda: {"runs": 0, "warned": 0, "events": 0, "warnings": 0, "first": [], "in_time": 0}
    )
    for loop_id, events in runs.items():
        label = labels.get(loop_id)
        if label is None:
            continue
        g = groups[group_of(label)]
        g["runs"] += 1
        g["events"] += len(events)
        mine = [w for w in warnings.get(loop_id, []) if kinds is None or w["kind"] in kinds]
        g["warnings"] += len(mine)
        if mine:
            g["warned"] += 1
            first = min(w["iteration"] for w in mine)
            g["first"].append(first)
            decisive = label.get("decisive_iteration")
            if decisive and first <= int(decisive):
                g["in_time"] += 1
    result: dict[str, Any] = {}
    for name, g in groups.items():
        result[name] = {
            "runs": g["runs"],
            "warned_share": g["warned"] / g["runs"] if g["runs"] else 0.0,
            "per_100_events": 100 * g["warnings"] / g["events"] if g["events"] else 0.0,
            "median_first_iteration": statistics.median(g["first"]) if g["first"] else None,
            "first_at_or_before_decisive": g["in_time"] / g["warned"] if g["warned"] else None,
        }
    resolved = result.get("resolved", {}).get("warned_share", 0.0)
    unresolved = result.get("unresolved", {}).get("warned_share", 0.0)
    result["lift"] = unresolved / resolved if resolved else (float("inf") if unresolved else None)
    return result


def row(name: str, figures: dict[str, Any]) -> str:
    r, u, f = (figures.get(k, {}) for k in ("resolved", "unresolved", "failed"))

    def pct(d: dict[str, Any]) -> str:
        return f"{100 * d.get('warned_share', 0):5.1f}% {d.get('per_100_events', 0):5.1f}"

    lift = figures.get("lift")
    lift_text = "  n/a" if lift is None else ("  inf" if lift == float("inf") else f"{lift:5.2f}")
    first = u.get("median_first_iteration")
    timely = f.get("first_at_or_before_decisive")
    return (
        f"{name:<24}{pct(r):>14}{pct(u):>14}{lift_text:>7}"
        f"{(first if first is not None else '-'):>8}{pct(f):>14}"
        f"{('-' if timely is None else f'{100 * timely:.0f}%'):>8}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", help="dataset directory (labels.csv, events/)")
    parser.add_argument("--set", action="append", default=[], help="NAME=VALUE (repeatable)")
    parser.add_argument(
        "--profile", action="append", help="profiles to show as the agent sees them"
    )
    args = parser.parse_args()
    runs, labels = load_runs(dataset_dir(args.dir))
    base = with_overrides(Settings(), args.set)
    every = with_overrides(base, ["detection.ladder=false"])
    every = every.model_copy(
        update={"detection": every.detection.model_copy(update={"detectors": tuple(REGISTRY)})}
    )
    all_warnings = run_profile(every, runs)
    report: dict[str, Any] = {"detectors": {}, "profiles": {}}
    head = (
        f"{'':<24}{'resolved':>14}{'unresolved':>14}{'lift':>7}{'first':>8}"
        f"{'failed (W&W)':>14}{'≤decis.':>8}\n{'detector / profile':<24}"
        f"{'runs%  /100':>14}{'runs%  /100':>14}{'':>7}{'(unres.)':>8}{'runs%  /100':>14}"
    )
    print(f"{len(runs)} runs, {sum(len(e) for e in runs.values())} events\n")
    print(head)
    kinds = sorted({cls.kind for cls in REGISTRY.values()} | {"logic_spin"})
    for kind in kinds:
        figures = stats(all_warnings, runs, labels, {kind})
        report["detectors"][kind] = figures
        print(row(kind, figures))
    print()
    for profile in args.profile or ["seed", "patterns"]:
        settings = with_overrides(base, [f"detection.profile={profile}"])
        seen = run_profile(settings, runs)
        shown = {ws_kind for ws in seen.values() for ws_kind in (w["kind"] for w in ws)}
        visible = shown - {"logic_spin"}
        report["profiles"][profile] = {
            "warnings": stats(seen, runs, labels, visible),
            "with_cascade": stats(seen, runs, labels, None),
        }
        print(row(f"{profile}: agent sees", report["profiles"][profile]["warnings"]))
        print(row(f"{profile}: + analyst", report["profiles"][profile]["with_cascade"]))
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "detection_quality.json"
    out.write_text(json.dumps(report, indent=2, default=str))
    print(f"\nwritten to {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
