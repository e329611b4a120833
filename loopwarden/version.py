"""loopwarden's version, read once from the installed package's metadata (pyproject.toml
is the one place it is written)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def _installed_version() -> str:
    try:
        return version("loopwarden")
    except PackageNotFoundError:  # a source tree on sys.path, never installed
        return "0+unknown"


VERSION: str = _installed_version()
"""The version of the installed ``loopwarden`` distribution."""
