"""Progress in a result that masking would hide, and the per-tool rules, pure.

Results are compared with their volatile tokens masked (a timestamp, a pid, a
duration changes every run), numbers included. But a number that moves is often the
very thing the agent is waiting for: ready replicas ``0/3``, ``1/3``, ``2/3``; a queue
draining 1200, 800, 350; a page number; a percentage. :func:`figures_key` keeps those —
the numbers of a result that are not part of a time, a date, an id, an address, a
digest or a duration — so two near-identical results whose figures differ are
progress, not a repeat.

Tools differ, and users know theirs: ``detection.tools`` maps a glob (matched against
the ``action_type`` and the ``action_name``) to a rule (:func:`tool_rule`): ``exempt``
(never a repeat), ``poll`` (a polling call), ``masked`` (numbers in its results do not
count: a counter that ticks on its own) or ``numbers`` (the default). A call that waits
before it looks (``sleep 30 && gh run view``, ``watch``, ``--watch``) is a polling call
without a rule (:func:`polls`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fnmatch import fnmatchcase
from typing import Any

from loopwarden.agents.spin import textscan
from loopwarden.schemas.text_limits import result_digest

FIGURE_CHARS = 2000
"""Only this much of a result is read for its figures."""

_WAITS = re.compile(r"(?:^|[;&|(]\s*|\s)(?:sleep\s+\d|watch\s)|--watch\b|--wait\b", re.MULTILINE)


def figures_key(text: str | None) -> str | None:
    """A digest of the figures of ``text`` (module docstring); None without text."""
    if not text:
        return None
    return result_digest(textscan.figures(text[:FIGURE_CHARS]))[:12]


def tool_rule(payload: Any, tools: Mapping[str, str]) -> str:
    """The rule of ``detection.tools`` whose glob matches the call's ``action_type`` or
    ``action_name`` first, else ``numbers``."""
    names = (payload.action_type, payload.action_name or "")
    for pattern, rule in tools.items():
        if any(fnmatchcase(name, pattern) for name in names):
            return rule
    return "numbers"


def polls(payload: Any, rule: str) -> bool:
    """A polling call: the tool's rule says so, or its command waits before it looks."""
    if rule == "poll":
        return True
    command = payload.params.get("command") or payload.params.get("cmd")
    text = command if isinstance(command, str) else payload.action_name or ""
    return bool(_WAITS.search(text))
