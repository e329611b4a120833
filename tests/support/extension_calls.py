"""Which unit tests reach the compiled passes: the rest need no second run.

``make test`` runs the unit tests a second time on the pure-Python twins
(``LOOPWARDEN_NO_EXTENSIONS=1``). A test that never calls a compiled pass (the text
scan's ``mask_volatile``, ``figures`` and ``scan``, the redaction prefilter's
``candidates``) runs the same code both ways; ``tests/support/extension_free.txt``
lists those tests — a whole file where none of its tests does (the second run does
not even collect it), else each test by its node id (the second run deselects it,
:func:`pytest_collection_modifyitems`). This plugin finds them, with the extensions on:

    PYTHONPATH=tests/support .venv/bin/pytest -n 2 -p extension_calls \\
        --extension-free tests/support/extension_free.txt tests/unit     (make extension-free)

and the second run reads the list back with ``--skip-extension-free FILE``. A call made
while a test's fixtures were set up counts for every test of its file (a module-scoped
fixture computed once serves the tests after it); a file that tests the switch itself
(it names ``LOOPWARDEN_NO_EXTENSIONS``) is always run both ways (``test_textscan``,
which checks the passes are the compiled ones, is left out of this run); a new test is
run both ways until the list is made again.
"""

from __future__ import annotations

import collections
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

_CALLS: collections.Counter[str] = collections.Counter()
"""Calls by key: a test's node id, or ``<file>::(setup)`` for its fixtures' set-up."""
_CURRENT: list[str | None] = [None]
SETUP = "::(setup)"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--extension-free",
        type=Path,
        help="write the unit tests that never reach a compiled pass to this file",
    )
    parser.addoption(
        "--skip-extension-free",
        type=Path,
        help="deselect the tests of this list (node ids; its files are --ignore'd)",
    )


def _counted(original: Callable[..., Any]) -> Callable[..., Any]:
    def counted(*args: Any, **kwargs: Any) -> Any:
        if _CURRENT[0] is not None:
            _CALLS[_CURRENT[0]] += 1
        return original(*args, **kwargs)

    return counted


def pytest_configure(config: pytest.Config) -> None:
    """With ``--extension-free``: count the compiled passes' calls, before any test
    module binds them."""
    if config.getoption("--extension-free") is None:
        return
    from loopwarden.agents.spin import textscan
    from loopwarden.schemas import redaction_prefilter

    for name in ("mask_volatile", "figures", "scan"):
        setattr(textscan, name, _counted(getattr(textscan, name)))
    prefilter = redaction_prefilter.Prefilter
    prefilter.candidates = _counted(prefilter.candidates)  # type: ignore[method-assign]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    _CALLS[item.nodeid] += 0
    _CURRENT[0] = item.nodeid.split("::")[0] + SETUP
    yield
    _CURRENT[0] = item.nodeid


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    yield
    _CURRENT[0] = None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With ``--skip-extension-free``: deselect the tests the list names by node id."""
    listed: Path | None = config.getoption("--skip-extension-free")
    if listed is None:
        return
    free = {line for line in listed.read_text().splitlines() if "::" in line}
    kept = [item for item in items if item.nodeid not in free]
    if len(kept) != len(items):
        config.hook.pytest_deselected(items=[item for item in items if item.nodeid in free])
        items[:] = kept


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Each xdist worker leaves its counts; the controller (or a plain run) merges them."""
    config = session.config
    target: Path | None = config.getoption("--extension-free")
    if target is None:
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    part = target.with_suffix(f".{worker or 'main'}.json")
    part.write_text(json.dumps(_CALLS))
    if worker is not None:
        return
    counts: collections.Counter[str] = collections.Counter()
    for found in target.parent.glob(f"{target.stem}.*.json"):
        counts.update(json.loads(found.read_text()))
        found.unlink()
    target.write_text(HEADER + "".join(f"{line}\n" for line in extension_free(counts)))


HEADER = (
    "# unit tests that never reach a compiled pass (made by make extension-free):\n"
    "# a file where none of its tests does, else the tests by node id\n"
)


def extension_free(counts: collections.Counter[str]) -> list[str]:
    """The files, then the tests, that reached no compiled pass (module docstring)."""
    files: dict[str, list[str]] = collections.defaultdict(list)
    for key in counts:
        if not key.endswith(SETUP):
            files[key.split("::")[0]].append(key)
    free: list[str] = []
    for module, tests in sorted(files.items()):
        if "LOOPWARDEN_NO_EXTENSIONS" in Path(module).read_text():
            continue
        reached = [test for test in tests if counts[test]]
        if not reached and not counts[module + SETUP]:
            free.append(module)
        elif not counts[module + SETUP]:
            free.extend(sorted(test for test in tests if not counts[test]))
    return free
