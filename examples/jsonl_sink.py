"""An output sink of your own: every warning appended to a JSON-lines file.

Nothing in loopwarden is edited to add it. Name its factory in the ``sinks`` setting
and make the module importable (here, from this folder)::

    WARNINGS_FILE=warnings.jsonl PYTHONPATH=examples \\
        LOOPWARDEN_SINKS='["jsonl_sink:warnings_to_file"]' loopwarden dev

or, in a package of your own, register it in the ``loopwarden.sinks`` entry-point
group (``pyproject.toml``) and install the package next to the worker::

    [project.entry-points."loopwarden.sinks"]
    warnings-file = "jsonl_sink:warnings_to_file"

A sink receives each output it names as plain JSON, after its Kafka record is
queued, and must not block the worker: writing one line to a local file is quick;
anything slow (a network call) goes in an ``async def run(self)``, which the worker
runs as a task (``loopwarden.streams.runtime.webhook_sink`` is such a sink).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


class JsonLinesSink:
    """Appends each warning to ``path``, one JSON object a line."""

    outputs = frozenset({"warnings"})

    def __init__(self, path: Path) -> None:
        self.path = path
        self.written = 0

    def deliver(self, output: str, value: Any) -> None:
        with self.path.open("a", encoding="utf-8") as file:
            file.write(json.dumps({"output": output, **value}) + "\n")
        self.written += 1


def warnings_to_file(settings: Any) -> JsonLinesSink | None:
    """The factory the worker calls with its settings: a sink when ``WARNINGS_FILE`` is
    set, else None (this worker was not asked for one)."""
    path = os.environ.get("WARNINGS_FILE")
    return JsonLinesSink(Path(path)) if path else None
