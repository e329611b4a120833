"""Type-check the product code with mypy, as the installed package lays it out.

The fixed top-level folders (``agents/``, ``schemas/``, ``storage/``, ``streams/``) are
``loopwarden``'s subpackages once installed (``package-dir`` in pyproject.toml), a
mapping mypy cannot follow. This builds that layout as a tree of symbolic links
(``.venv/typecheck/loopwarden``) and runs mypy on it with ``[tool.mypy]`` from
pyproject.toml; the paths it reports are the clone's own. Exit code: mypy's.

    .venv/bin/python tests/support/typecheck.py     (make typecheck; part of make test)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parents[2]
MAPPED = ("agents", "schemas", "storage", "streams")
"""Folders installed as ``loopwarden.<name>``."""


def link_tree(at: Path) -> Path:
    """``at/loopwarden``: the package as installed, made of links into the clone."""
    package = at / "loopwarden"
    package.mkdir(parents=True, exist_ok=True)
    wanted = {entry.name: entry for entry in (ROOT / "loopwarden").iterdir()}
    wanted.update({name: ROOT / name for name in MAPPED})
    wanted = {k: v for k, v in wanted.items() if k != "__pycache__"}
    for link in package.iterdir():
        if link.name not in wanted or link.resolve() != wanted[link.name]:
            link.unlink()
    for name, target in wanted.items():
        if not (package / name).is_symlink():
            (package / name).symlink_to(target)
    return at


def main() -> int:
    tree = link_tree(ROOT / ".venv" / "typecheck")
    os.chdir(tree)
    out, err, code = api.run(
        [
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(ROOT / ".venv" / "mypy_cache"),
            "--python-executable",
            sys.executable,
            "-p",
            "loopwarden",
        ]
    )
    for line in out.splitlines():  # loopwarden/agents/x.py → agents/x.py, as in the clone
        path, sep, rest = line.partition(":")
        parts = Path(path).parts
        if sep and parts[:1] == ("loopwarden",) and len(parts) > 1 and parts[1] in MAPPED:
            line = f"{Path(*parts[1:])}{sep}{rest}"
        print(line)
    sys.stderr.write(err)
    return code


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # as mypy's own command line does (fast_exit): tearing down the checked program's
    # graph at the interpreter's exit took as long as the check (11.1 s of checking,
    # 21.6 s for the process, 2026-12-07)
    os._exit(code)
