"""Who owns which partition, read from the workers' logs.

Each keyed capability logs ``<table> owns partitions [..] of <topic>`` at every
assignment (``streams/runtime/keyed_runner.py``); the group-change test and benchmark
wait on it (the embedded broker's DescribeGroups answers no member assignment).
"""

from __future__ import annotations

import re

OWNS = re.compile(r"owns partitions \[([\d, ]*)\] of (\S+)")


def owned(log: str, topic: str) -> set[int]:
    """The partitions of ``topic`` the last assignment logged in ``log`` gave."""
    found = [m for m in OWNS.finditer(log) if m.group(2) == topic]
    return {int(n) for n in found[-1].group(1).split(",") if n.strip()} if found else set()
