"""Benchmark: redaction measured both ways — no secret left, ordinary text left alone.

Two corpora go through the redaction every event gets at the edge
(``schemas/redaction.py``):

- **secrets**: every text of the secrets corpus (``secrets_corpus.SECRETS``) alone,
  inside an error line, inside a JSON document and as a command argument, plus the
  secrets only their key names give away (``SECRET_PARAMS``) as event parameters.
  Counted: secrets still in clear (the goal is 0).
- **ordinary text**: every distinct error line, command and output line of the real
  runs in the trajectories dataset, plus text that names a secret without holding
  one (``secrets_corpus.NAMES_A_SECRET``: ``/etc/passwd: Permission denied``, ``a
  password is required``, …) and parameters whose keys only mention one
  (``KEYS_THAT_NAME_A_SECRET``: ``secret_name``, ``auth_method``, …).
  Counted: lines altered (the goal is ≤ 0.5 %).

Prints both with examples of what was altered, writes
``benchmarks/results/redaction.json``.

    .venv/bin/python benchmarks/redaction.py [--dir DATASET]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import orjson

from loopwarden.schemas.redaction import redact, redact_text

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from secrets_corpus import (
    KEYS_THAT_NAME_A_SECRET,
    NAMES_A_SECRET,
    SECRET_PARAMS,
    SECRETS,
)

RESULTS = Path(__file__).parent / "results"
DEFAULT_DIR = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "trajectories"

CONTEXTS = (
    "{}",
    "Error: request failed ({}) — retrying",
    '{{"step": 3, "note": "{}"}}',
    "run.sh --verbose {}",
)


def dataset_lines(root: Path) -> list[str]:
    """Distinct error lines, commands and output lines of the dataset's runs."""
    lines: dict[str, None] = {}
    for path in sorted((root / "events").glob("*/*.jsonl")):
        for raw in path.read_bytes().splitlines():
            if not raw.strip():
                continue
            event = orjson.loads(raw)
            params = event.get("params") or {}
            for text in (event.get("error_message"), params.get("command")):
                for line in str(text or "").splitlines():
                    if line.strip():
                        lines[line] = None
            for line in str(params.get("observation") or "").splitlines():
                if line.strip():
                    lines[line] = None
    return list(lines)


def secrets_left() -> tuple[int, int, list[str]]:
    """(cases, secrets in clear, their names)."""
    cases, leaks = 0, []
    for name, text, secret in SECRETS:
        for context in CONTEXTS:
            cases += 1
            if secret in redact_text(context.format(text)):
                leaks.append(f"{name} in {context!r}")
    for key, secret in SECRET_PARAMS.items():
        cases += 1
        if secret in json.dumps(redact({"params": {key: secret, "path": "/x"}})):
            leaks.append(f"param {key}")
    return cases, len(leaks), leaks


def altered(lines: list[str]) -> list[tuple[str, str]]:
    """(before, after) of every line redaction changes."""
    out = []
    for line in lines:
        after = redact_text(line)
        if after != line:
            out.append((line, after))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", help="trajectories dataset (events/)")
    args = parser.parse_args()
    root = Path(args.dir or os.environ.get("LOOPWARDEN_TRAJECTORIES") or DEFAULT_DIR)
    cases, leaks, leaked = secrets_left()
    ordinary = dataset_lines(root) if (root / "events").exists() else []
    started = time.perf_counter()
    changed = altered(ordinary)
    per_line_us = 1e6 * (time.perf_counter() - started) / max(len(ordinary), 1)
    messages = altered(list(NAMES_A_SECRET))
    params = [k for k in KEYS_THAT_NAME_A_SECRET if redact({k: "value-1"}) != {k: "value-1"}]
    print(f"secrets corpus: {cases} cases, {leaks} secret(s) in clear (goal 0)")
    for name in leaked:
        print(f"  in clear: {name}")
    share = 100 * len(changed) / len(ordinary) if ordinary else 0.0
    print(
        f"ordinary dataset lines: {len(ordinary)}, {len(changed)} altered = {share:.3f} % "
        f"(goal <= 0.5 %), {per_line_us:.1f} us a line"
    )
    print(
        f"error messages naming secrets: {len(messages)} of {len(NAMES_A_SECRET)} "
        f"altered; parameters naming secrets: {len(params)} of "
        f"{len(KEYS_THAT_NAME_A_SECRET)} altered"
    )
    for before, after in [*messages, *changed[:15]]:
        print(f"  {before[:90]!r}\n   -> {after[:90]!r}")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "redaction.json"
    report = {
        "secret_cases": cases,
        "secrets_in_clear": leaks,
        "ordinary_lines": len(ordinary),
        "ordinary_altered": len(changed),
        "ordinary_altered_share": share / 100,
        "messages_altered": len(messages),
        "params_altered": len(params),
        "us_per_line": per_line_us,
        "altered_examples": changed[:50],
    }
    out.write_text(json.dumps(report, indent=2))
    print(f"written to {out}", file=sys.stderr)
    if leaks:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
