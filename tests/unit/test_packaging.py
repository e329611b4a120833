"""Every source folder ships in the wheel: the package list in pyproject.toml is explicit."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_source_folder_is_a_listed_package():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    mapped = config["package-dir"]
    expected = set()
    for package, folder in mapped.items():
        for init in (ROOT / folder).rglob("*.py"):
            relative = init.parent.relative_to(ROOT / folder)
            expected.add(".".join((package, *relative.parts)) if relative.parts else package)
    missing = expected - listed
    assert not missing, f"folders with modules but not packaged: {sorted(missing)}"


def test_every_exported_name_resolves():
    import loopwarden

    for name in loopwarden.__all__:
        assert getattr(loopwarden, name) is not None, name


def test_the_client_sdk_never_imports_the_worker_agents():
    """ARCHITECTURE: the client SDK (every exported name) stands apart from ``agents/``."""
    import subprocess
    import sys

    code = (
        "import sys, loopwarden\n"
        "for name in loopwarden.__all__: getattr(loopwarden, name)\n"
        "print(sorted(m for m in sys.modules if m.startswith('loopwarden.agents')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
