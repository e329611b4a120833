"""The shape of the keyed-state kit and the capabilities on it: lines, closures, McCabe.

Static figures of a tree (the clone by default, or any commit with ``--commit``), the
ones issue 60 tracks: for the kit (``streams/runtime/state/``) and for each keyed
capability's wiring (``agent.py``) and processor (``records.py``), the lines, the
closures (functions defined inside functions) and the largest McCabe complexity of a
function (ruff's C901, nested functions counted in their parent as mccabe does); and
over the product code, the ``Any`` tokens and the places that write ``"schema_version"``.

    .venv/bin/python benchmarks/kit_shape.py [--commit REV] [--json out.json]
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import re
import subprocess
import sys
import tarfile
import tempfile
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("agents", "schemas", "storage", "streams", "infra", "loopwarden")
CAPABILITIES = ("monitor", "fleet", "guardrails", "experience")


def tree_at(commit: str | None, into: Path) -> Path:
    """The clone (None) or ``commit``'s tree extracted under ``into``."""
    if commit is None:
        return ROOT
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", commit, *PRODUCT], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def closures(source: str) -> int:
    """Functions defined inside another function."""
    count = 0

    def visit(node: ast.AST, inside: bool) -> None:
        nonlocal count
        for child in ast.iter_child_nodes(node):
            is_function = isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if is_function and inside:
                count += 1
            visit(child, inside or is_function)

    visit(ast.parse(source), False)
    return count


def mccabe(paths: list[Path]) -> int:
    """The largest McCabe complexity of a function in ``paths`` (0: none)."""
    if not paths:
        return 0
    out = subprocess.run(
        [
            str(ROOT / ".venv" / "bin" / "ruff"),
            "check",
            "--isolated",
            "--select",
            "C901",
            "--config",
            "lint.mccabe.max-complexity=0",
            "--output-format",
            "concise",
            *map(str, paths),
        ],
        capture_output=True,
        text=True,
    ).stdout
    found = [int(m) for m in re.findall(r"is too complex \((\d+) > 0\)", out)]
    return max(found, default=0)


def figures(paths: list[Path]) -> dict[str, int]:
    """Lines, closures and the largest McCabe of ``paths`` together."""
    texts = [path.read_text() for path in paths]
    return {
        "files": len(paths),
        "lines": sum(text.count("\n") for text in texts),
        "closures": sum(closures(text) for text in texts),
        "mccabe_max": mccabe(paths),
    }


def any_tokens(root: Path) -> int:
    """``Any`` name tokens in the product code."""
    count = 0
    for folder in PRODUCT:
        for path in (root / folder).rglob("*.py"):
            tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
            count += sum(1 for t in tokens if t.type == tokenize.NAME and t.string == "Any")
    return count


def schema_version_writes(root: Path) -> int:
    """Places in the product code that write ``"schema_version":`` into a dict."""
    count = 0
    for folder in PRODUCT:
        for path in (root / folder).rglob("*.py"):
            count += len(re.findall(r'"schema_version":\s*SCHEMA_VERSION', path.read_text()))
    return count


def measure(root: Path) -> dict[str, object]:
    """Every figure of the tree at ``root``."""
    kit = sorted((root / "streams" / "runtime" / "state").glob("*.py"))
    rows: dict[str, object] = {"kit": figures(kit)}
    for name in CAPABILITIES:
        folder = root / "agents" / name
        rows[f"{name} wiring"] = figures([folder / "agent.py"])
        rows[f"{name} processor"] = figures([folder / "records.py"])
    rows["Any tokens"] = any_tokens(root)
    rows["schema_version writes"] = schema_version_writes(root)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commit", help="measure this commit instead of the clone")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = measure(tree_at(args.commit, Path(tmp)))
    print(f"{'':24} {'files':>5} {'lines':>6} {'closures':>8} {'McCabe max':>10}")
    for name, value in rows.items():
        if isinstance(value, dict):
            print(
                f"{name:24} {value['files']:>5} {value['lines']:>6} {value['closures']:>8} "
                f"{value['mccabe_max']:>10}"
            )
        else:
            print(f"{name:24} {value:>5}")
    if args.json:
        args.json.write_text(json.dumps({"commit": args.commit or "clone", **rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
