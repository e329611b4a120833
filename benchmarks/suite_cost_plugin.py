"""A pytest plugin for ``benchmarks/suite_cost.py``: the CPU each test cost.

Each test's (setup + call + teardown) CPU is the change of ``os.times()`` across it:
this process's user + system time (all its threads) plus that of the child processes
it reaped meanwhile (a ``subprocess.run``, a worker stopped and waited for). A row per
test is appended to ``$SUITE_COST_DIR/<xdist worker>.jsonl``, and a last row
for the whole session of that process (what no test's window held: the session
fixtures' brokers, reaped at the end).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

ENV = "SUITE_COST_DIR"


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _out() -> Path | None:
    folder = os.environ.get(ENV)
    if not folder:
        return None
    name = os.environ.get("PYTEST_XDIST_WORKER", "main")
    return Path(folder) / f"{name}.jsonl"


def _write(row: dict[str, object]) -> None:
    out = _out()
    if out is not None:
        with out.open("ab") as file:
            file.write(orjson.dumps(row) + b"\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    cpu, wall = _cpu(), time.monotonic()
    yield
    _write({"test": item.nodeid, "cpu_s": _cpu() - cpu, "wall_s": time.monotonic() - wall})


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_started] = (_cpu(), time.monotonic())


def pytest_sessionfinish(session: pytest.Session) -> None:
    cpu, wall = session.config.stash[_started]
    _write({"session": True, "cpu_s": _cpu() - cpu, "wall_s": time.monotonic() - wall})


_started = pytest.StashKey[tuple[float, float]]()
