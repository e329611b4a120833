"""Which unit-test files reach the compiled passes: the rest need no second run.

``make test`` runs the unit tests a second time on the pure-Python twins
(``LOOPWARDEN_NO_EXTENSIONS=1``). A test file whose tests never call a compiled pass
(the text scan's ``mask_volatile`` and ``scan``, the redaction prefilter's
``candidates``) runs the same code both ways; ``tests/support/extension_free.txt``
lists those files and the second run leaves them out. This plugin finds them, with the
extensions on:

    PYTHONPATH=tests/support .venv/bin/pytest -n 2 -p extension_calls \\
        --extension-free tests/support/extension_free.txt tests/unit     (make extension-free)

A file that tests the switch itself (it names ``LOOPWARDEN_NO_EXTENSIONS``) is always
run both ways (``test_textscan``, which checks the passes are the compiled ones, is left
out of this run); a new test file is run both ways until the list is made again.
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
_CURRENT: list[str | None] = [None]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--extension-free",
        type=Path,
        help="write the unit-test files that never reach a compiled pass to this file",
    )


def _counted(original: Callable[..., Any]) -> Callable[..., Any]:
    def counted(*args: Any, **kwargs: Any) -> Any:
        if _CURRENT[0] is not None:
            _CALLS[_CURRENT[0]] += 1
        return original(*args, **kwargs)

    return counted


def pytest_configure(config: pytest.Config) -> None:
    """Count the compiled passes' calls, before any test module binds them."""
    from loopwarden.agents.spin import textscan
    from loopwarden.schemas import redaction_prefilter

    for name in ("mask_volatile", "figures", "scan"):
        setattr(textscan, name, _counted(getattr(textscan, name)))
    prefilter = redaction_prefilter.Prefilter
    prefilter.candidates = _counted(prefilter.candidates)  # type: ignore[method-assign]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    module = item.nodeid.split("::")[0]
    _CALLS[module] += 0
    _CURRENT[0] = module
    yield
    _CURRENT[0] = None


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
    free = sorted(
        module
        for module, calls in counts.items()
        if calls == 0 and "LOOPWARDEN_NO_EXTENSIONS" not in Path(module).read_text()
    )
    header = "# unit-test files that never reach a compiled pass (made by make extension-free)\n"
    target.write_text(header + "".join(f"{module}\n" for module in free))
