"""Modules imported at their first use, not when the suite is collected.

Every test process collects every test module (pytest-xdist hands out tests, not
imports), so what a module imports at its top is paid by each of them. The agent
frameworks the adapters' tests drive cost half of a process's collection: 11.2 s of
CPU with them, 5.8 s without (``pytest --collect-only``, 2026-12-07) — for the one
process that runs those tests. A module that needs one names it with
:func:`deferred` (``pai = deferred("pydantic_ai")``) and uses ``pai.Agent``: the
import happens when a test first reaches for it. With ``from __future__ import
annotations``, ``ctx: pai.RunContext`` is resolved the same way when a framework
reads the annotation.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class DeferredModule:
    """A stand-in for module ``name`` that imports it on the first attribute read."""

    __slots__ = ("_module", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attribute: str) -> Any:
        module = self._module
        if module is None:
            if attribute.startswith("_"):
                # what collection asks of every name in a module (a fixture's marker,
                # ``__test__``): not a reason to import the framework
                raise AttributeError(attribute)
            module = self._module = importlib.import_module(self._name)
        return getattr(module, attribute)

    def __repr__(self) -> str:
        state = "imported" if self._module is not None else "not imported yet"
        return f"<deferred module {self._name!r} ({state})>"


def deferred(name: str) -> Any:
    """Module ``name``, imported when one of its attributes is first read."""
    return DeferredModule(name)
