"""The output sinks a worker may attach besides Kafka, in one list.

A sink is one module with a class that has ``outputs`` (the named outputs it
takes) and ``deliver(output, value)`` (see
:class:`~loopwarden.streams.runtime.outputs.OutputSink`) — and, when it does slow
work, ``async run()``, which the worker runs as a task — plus a function that
builds it from the settings (None: not asked for). Adding one is that module and
a line in :data:`OUTPUT_SINKS`.
"""

from __future__ import annotations

import pkgutil
from typing import Any

from loopwarden.errors import ConfigurationError
from loopwarden.streams.runtime.app import LoopwardenApp

OUTPUT_SINKS: dict[str, str] = {
    "webhook": "loopwarden.streams.runtime.webhook_sink:webhook_from_settings",
}
"""Sink name → import path of ``factory(settings) -> sink | None``."""


def attach_output_sinks(app: LoopwardenApp) -> dict[str, Any]:
    """Build the sinks the settings ask for, attach them to ``app.outputs`` and run
    their ``run`` as worker tasks; the attached sinks by name (also ``app.output_sinks``)."""
    attached: dict[str, Any] = {}
    for name, path in OUTPUT_SINKS.items():
        sink = pkgutil.resolve_name(path)(app.loopwarden)
        if sink is None:
            continue
        try:
            app.outputs.attach(sink)
        except ValueError as exc:
            raise ConfigurationError(f"the {name} sink: {exc}") from exc
        if hasattr(sink, "run"):
            app.task(sink.run)
        attached[name] = sink
    app.output_sinks = attached
    return attached
