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

MAPPED = ("agents", "schemas", "storage", "streams")
"""The fixed folders the package maps as ``loopwarden.<name>`` (pyproject.toml)."""

LINT = """
import sys
from pathlib import Path
import loopwarden  # from the clone: the fixed folders become loopwarden's subpackages
root, config, links = sys.argv[1:4]
assert root in loopwarden.__path__, loopwarden.__path__
# the package as installed: loopwarden/ and the mapped folders, not the whole clone
# (grimp walks every folder on __path__: the clone's root held .venv, a minute of CPU)
loopwarden.__path__[:] = [str(Path(root) / "loopwarden"), links]
from importlinter import cli
sys.exit(cli.lint_imports(config_filename=config, no_cache=True, no_logo=True))
"""


def mapped_folders(at: Path) -> Path:
    """``at``: a folder of links to the mapped folders only."""
    at.mkdir(parents=True, exist_ok=True)
    for name in MAPPED:
        link = at / name
        if not link.is_symlink():
            link.symlink_to(ROOT / name)
    return at


def test_the_import_contracts_hold(tmp_path: Path) -> None:
    links = mapped_folders(tmp_path / "mapped")
    done = subprocess.run(
        [sys.executable, "-c", LINT, str(ROOT), str(ROOT / "pyproject.toml"), str(links)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 3 kept, 0 broken." in done.stdout
