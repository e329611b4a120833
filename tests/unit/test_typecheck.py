"""The product code type-checks: mypy over the installed layout, strict at the kit's
seams (``[tool.mypy]`` in pyproject.toml; ``tests/support/typecheck.py``, also
``make typecheck``).

It runs in a process of its own, among the other tests: a cold check (no mypy cache)
takes 12 s of one core alone (a minute before 2026-12-07: mypy's slow exit, OpenAI's
SDK analysed), which the suite's waits for group joins leave free — on a loaded fresh
clone it once took over the suite's 180 s default timeout, so it keeps its own bound."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(600)
def test_mypy_finds_no_error_in_the_product_code() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "support" / "typecheck.py")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("Success: no issues found"), done.stdout
