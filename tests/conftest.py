"""Shared test helpers: event builders."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from loopwarden.schemas.events import ActionEvent, validate_action
from loopwarden.schemas.redaction import default_redactor

FIRST = (
    "tests/integration/test_fault_suite.py",
    "tests/integration/test_capability_wiring.py",
    "tests/integration/test_memory_stream.py",
    "tests/integration/test_replay.py",
    "tests/integration/test_group_changes.py",
    "tests/integration/test_restart.py",
    "tests/integration/test_readme.py",
    "tests/integration/test_client_install.py",
    "tests/integration/test_examples.py",
    "tests/unit/test_typecheck.py",
)
"""Modules handed out first, the longest (wall time among the others, a fresh clone on
2026-12-07, ``benchmarks/suite_cost.py``: the fault suite, the wiring and memory's
stream tests 57–60 s each, the replays 52 s, the group changes and the restarts 44 s,
the docs' blocks 39 s, the client install 36 s, the examples 30 s, a cold type check
19 s: started last, one would end the suite a minute late)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        module = item.nodeid.split("::")[0]
        return FIRST.index(module) if module in FIRST else len(FIRST)

    items.sort(key=rank)  # stable: else as found


@pytest.fixture(autouse=True, scope="session")
def redaction_prefilter():
    """The tests run with the compiled redaction prefilter, ready from the first test
    (with LOOPWARDEN_NO_EXTENSIONS=1: without it, on the pure-Python gates)."""
    default_redactor().use_prefilter(background=False)


_ids = itertools.count()


def action(loop_id: str = "loop-1", action_type: str = "search", **payload: Any) -> ActionEvent:
    """A valid action event with a fresh id and increasing event time."""
    n = next(_ids)
    event_id = payload.pop("event_id", f"ev-{n}")
    occurred_at = payload.pop("occurred_at", 1_700_000_000.0 + n)
    return validate_action(
        {
            "event_id": event_id,
            "loop_id": loop_id,
            "occurred_at": occurred_at,
            "payload": {"action_type": action_type, **payload},
        }
    )


@pytest.fixture
def make_action():
    return action
