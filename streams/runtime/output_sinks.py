"""The output sinks a worker attaches besides Kafka: built in, installed, or named.

A sink is an object with ``outputs`` (the named outputs it takes) and
``deliver(output, value)`` (see :class:`~loopwarden.streams.runtime.outputs.OutputSink`)
— and, when it does slow work, ``async run()``, which the worker runs as a task. It
is made by a **factory**, ``factory(settings) -> sink | None`` (None: not asked for
by these settings). A worker takes its factories from three places, in this order:

1. the built-in ones (:data:`BUILT_IN`: the webhook);
2. the ``loopwarden.sinks`` entry-point group of every installed distribution (a
   package declares ``[project.entry-points."loopwarden.sinks"] name =
   "module:factory"``: installing it is enough);
3. the ``sinks`` setting (``LOOPWARDEN_SINKS='["module:factory"]'``): import paths,
   for a sink that lives in the user's own code.

Nothing here edits the package to add a sink. A factory that cannot be imported, that
raises, or that returns something that is not a sink stops the worker at start with
the sink's name and where it came from: a sink silently missing would lose outputs.
"""

from __future__ import annotations

import logging
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from loopwarden.errors import ConfigurationError
from loopwarden.settings import Settings
from loopwarden.streams.runtime.app import LoopwardenApp

ENTRY_POINT_GROUP = "loopwarden.sinks"
"""The entry-point group installed packages register sink factories in."""

BUILT_IN: dict[str, str] = {
    "webhook": "loopwarden.streams.runtime.webhook_sink:webhook_from_settings",
}
"""Sink name → import path of the factory, shipped with loopwarden."""

log = logging.getLogger("loopwarden.worker")


@dataclass(frozen=True, slots=True)
class SinkFactory:
    """Where a sink comes from: its name, what makes it, and who said so."""

    name: str
    load: Callable[[], Any]
    """Returns the factory (imports it)."""
    origin: str
    """For messages: ``built in``, ``entry point … of <distribution>``, ``setting sinks``."""


def _from_path(path: str) -> Callable[[], Any]:
    return lambda: pkgutil.resolve_name(path)


def sink_factories(settings: Settings) -> list[SinkFactory]:
    """Every sink factory this worker consults, built in first, then installed, then
    named in ``settings.sinks``; two with one name is a configuration error."""
    found = [SinkFactory(name, _from_path(path), "built in") for name, path in BUILT_IN.items()]
    for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda p: p.name):
        distribution = point.dist.name if point.dist is not None else "an unknown distribution"
        origin = f"entry point {point.value!r} of {distribution}"
        found.append(SinkFactory(point.name, point.load, origin))
    for path in settings.sinks:
        found.append(SinkFactory(path, _from_path(path), "setting sinks"))
    seen: dict[str, str] = {}
    for factory in found:
        if factory.name in seen:
            raise ConfigurationError(
                f"two output sinks are named {factory.name!r}: {seen[factory.name]} and "
                f"{factory.origin}"
            )
        seen[factory.name] = factory.origin
    return found


def build_sink(factory: SinkFactory, settings: Settings) -> Any | None:
    """The sink ``factory`` makes for ``settings`` (None: not asked for), checked."""
    where = f"output sink {factory.name!r} ({factory.origin})"
    try:
        make = factory.load()
    except (ImportError, AttributeError, ValueError) as exc:
        raise ConfigurationError(f"{where} cannot be imported: {exc}") from exc
    if not callable(make):
        raise ConfigurationError(f"{where} is not a factory: {make!r} cannot be called")
    try:
        sink = make(settings)
    except ConfigurationError:
        raise
    except Exception as exc:
        raise ConfigurationError(f"{where} failed to build: {exc!r}") from exc
    if sink is None:
        return None
    outputs = getattr(sink, "outputs", None)
    if not isinstance(outputs, (set, frozenset, list, tuple)) or not callable(
        getattr(sink, "deliver", None)
    ):
        raise ConfigurationError(
            f"{where} returned {type(sink).__name__}, which is not a sink: it needs "
            "`outputs` (a set of output names) and `deliver(output, value)`"
        )
    return sink


def attach_output_sinks(app: LoopwardenApp) -> dict[str, Any]:
    """Build the sinks the settings ask for, attach them to ``app.outputs`` and run
    their ``run`` as worker tasks; the attached sinks by name (also ``app.output_sinks``)."""
    settings = app.loopwarden
    attached: dict[str, Any] = {}
    for factory in sink_factories(settings):
        sink = build_sink(factory, settings)
        if sink is None:
            continue
        try:
            app.outputs.attach(sink)
        except ValueError as exc:
            raise ConfigurationError(
                f"output sink {factory.name!r} ({factory.origin}): {exc}"
            ) from exc
        if hasattr(sink, "run"):
            app.task(sink.run)
        attached[factory.name] = sink
    app.output_sinks = attached
    log.info("output sinks: %s", attached_text(attached))
    return attached


def attached_text(attached: dict[str, Any]) -> str:
    """The attached sinks for the worker's log: each with the outputs it receives."""
    if not attached:
        return "none besides the Kafka topics"
    return "; ".join(
        f"{name} ({', '.join(sorted(sink.outputs))})" for name, sink in attached.items()
    )
