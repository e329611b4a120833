"""Loop families: a loop and its reruns (``loop_001``, ``loop_001_r1``, ``loop_001_r2``).

Shared by the client SDK and the worker, so it lives in ``schemas/``.
"""

from __future__ import annotations

import re

RUN_START = "delegated_run_start"
"""The message turn a delegated run starts with (it carries the run's ``task``)."""
TASK_MAX_CHARS = 2000
"""A delegated run's task is published up to this length."""

_RERUN = re.compile(r"^(?P<family>.+?)_r(?P<n>[1-9][0-9]*)$")


def family_of(loop_id: str) -> str:
    """The family id: the loop id without its ``_rN`` rerun suffix."""
    match = _RERUN.match(loop_id)
    return match.group("family") if match else loop_id


def rerun_index(loop_id: str) -> int:
    """0 for an original loop, N for ``…_rN``."""
    match = _RERUN.match(loop_id)
    return int(match.group("n")) if match else 0


def rerun_loop_id(family: str, number: int) -> str:
    """The id of a family's ``number``-th rerun."""
    return f"{family}_r{number}"
