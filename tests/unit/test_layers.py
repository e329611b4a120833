"""The architecture holds: the import contracts of ``[tool.importlinter]`` in
pyproject.toml (layers, the worker without the adapters, the client apart from the
worker), checked with import-linter over the real import graph."""

from __future__ import annotations

from pathlib import Path

import pytest
from importlinter import cli as import_linter

import loopwarden

ROOT = Path(__file__).resolve().parents[2]


def test_the_import_contracts_hold(capsys: pytest.CaptureFixture[str]) -> None:
    # `loopwarden` imported from the clone maps the fixed top-level folders
    # (agents/, streams/ …) as its subpackages, as the installed package does
    assert str(ROOT) in loopwarden.__path__
    code = import_linter.lint_imports(
        config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True
    )
    report = capsys.readouterr().out
    assert code == 0, report
    assert "Contracts: 3 kept, 0 broken." in report
