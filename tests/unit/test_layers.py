"""The architecture holds: the import contracts of ``[tool.importlinter]`` in
pyproject.toml (layers, the worker without the adapters, the client apart from the
worker), checked with import-linter over the real import graph.

import-linter runs in a process of its own: its command configures logging with
``dictConfig``, which disables every logger that exists (a test process's loggers
then stopped reaching ``caplog``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

LINT = """
import sys
import loopwarden  # from the clone: the fixed folders become loopwarden's subpackages
assert sys.argv[1] in loopwarden.__path__, loopwarden.__path__
from importlinter import cli
sys.exit(cli.lint_imports(config_filename=sys.argv[2], no_cache=True, no_logo=True))
"""


def test_the_import_contracts_hold() -> None:
    done = subprocess.run(
        [sys.executable, "-c", LINT, str(ROOT), str(ROOT / "pyproject.toml")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 3 kept, 0 broken." in done.stdout
