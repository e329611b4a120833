"""The client an agent author installs stays light: it imports no part of the worker.

``pip install loopwarden`` brings the client's few libraries only; the worker's
(faust, lancedb, numpy, pyarrow, the OpenTelemetry SDK, aiohttp) come with
``loopwarden[worker]``. These tests hold the line in this venv, where both are
installed: what the client modules import, statically and when loaded.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLIENT_DIRS = [ROOT / "streams" / "client", ROOT / "schemas", ROOT / "loopwarden" / "settings"]
CLIENT_NAMES = ("__init__.py", "errors.py", "adapters/guard.py")
CLIENT_FILES = [ROOT / "loopwarden" / name for name in (*CLIENT_NAMES, "adapters/connection.py")]
BULK_ONLY = {"memory_columns.py", "redaction_columns.py"}
"""Schemas of the Arrow path: the worker's, and a client's with ``loopwarden[bulk]``."""
WORKER_PACKAGES = (
    "loopwarden.streams.runtime",
    "loopwarden.streams.tools",
    "loopwarden.agents",
    "loopwarden.storage",
    "opentelemetry.sdk",
)
WORKER_LIBRARIES = ("faust", "lancedb", "numpy", "pyarrow", "opentelemetry.sdk", "aiohttp")


def client_modules() -> list[Path]:
    files = [f for d in CLIENT_DIRS for f in sorted(d.glob("*.py")) if f.name not in BULK_ONLY]
    return files + CLIENT_FILES


def dotted(path: Path) -> str:
    relative = path.relative_to(ROOT).with_suffix("")
    parts = list(relative.parts)
    if parts[0] != "loopwarden":
        parts.insert(0, "loopwarden")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_names(path: Path) -> set[str]:
    """Every module ``path`` imports at its top level (not inside functions: lazy)."""
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", client_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_a_client_module_imports_nothing_of_the_worker_at_its_top(path):
    heavy = {
        name
        for name in imported_names(path)
        if name.startswith(WORKER_PACKAGES) or name.split(".")[0] in WORKER_LIBRARIES
    }
    assert not heavy, f"{path.name} imports {sorted(heavy)}"


def test_loading_every_client_module_loads_no_worker_library():
    modules = [dotted(path) for path in client_modules()]
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        f"print(','.join(m for m in {WORKER_LIBRARIES!r} if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/"
    ).stdout.strip()
    assert loaded == "", f"the client loaded {loaded}"


def test_the_client_sends_json_memory_writes_without_numpy_or_pyarrow():
    """A memory write without an embedding needs neither; one with an embedding says
    what to install."""
    code = """
import sys
sys.modules["numpy"] = None  # as if not installed: importing it fails
sys.modules["pyarrow"] = None
from loopwarden.errors import EventValidationError
from loopwarden.streams.client.memory_writes import (
    arrow_available, make_memory_write, memory_write_records,
)
records, ids = memory_write_records(
    [{"content": "a fact"}], "json", [0, 1], "memory", None, 1 << 20
)
assert len(records) == 1 and len(ids) == 1
try:
    make_memory_write("a fact", embedding=[0.1, 0.2])
except EventValidationError as exc:
    print(exc)
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/"
    ).stdout
    assert "an embedding needs numpy on the client: pip install 'loopwarden[bulk]'" in out
