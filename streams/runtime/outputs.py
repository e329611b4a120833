"""Named outputs: where what a capability produces goes, decided in one place.

A capability's processor names what it produces — ``warnings``, ``decisions``,
``advice`` … — and never a topic. The :class:`OutputRouter` maps each name to its
:class:`Route` (topic, record key, whether the headers carry the value's trace
context), queues the record on the worker's batched
:class:`~loopwarden.streams.runtime.sink.RecordSink` (any
:class:`~loopwarden.streams.runtime.record_queue.RecordQueue`), and hands the value to every
:class:`OutputSink` attached for that name: the warning metrics and the
loop-health page are two such sinks, a webhook
(:mod:`loopwarden.streams.runtime.webhook_sink`) is a third. A new sink (a chat
notifier, an OTel event) is one class with ``outputs`` and ``deliver``; no
capability changes.

The Kafka record is the output of record (at-least-once, committed with the
input); an attached sink sees the value after it is queued and must not block.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from loopwarden.schemas import codec
from loopwarden.schemas.families import family_of
from loopwarden.schemas.memory import memory_id_for, memory_record_key
from loopwarden.settings import Settings, TopicSettings
from loopwarden.streams.client.propagation import headers_of
from loopwarden.streams.runtime.record_queue import RecordQueue

Value = Any
"""An output: a dict, a list of dicts (one record of grouped outcomes), or an event
model (its bytes passed as ``encoded``); sinks always receive plain JSON values."""


def _field(value: Value, name: str) -> str:
    first = value[0] if isinstance(value, list) else value
    return str(first[name] if isinstance(first, dict) else getattr(first, name))


def by_loop(value: Value, settings: Settings) -> bytes:
    """Keyed by loop id: a loop's outputs in order on one partition."""
    if type(value) is dict:  # the per-event path: warnings, requests
        return value["loop_id"].encode()
    return _field(value, "loop_id").encode()


def by_family(value: Value, settings: Settings) -> bytes:
    """Keyed by loop family (a loop and its reruns share the family's state)."""
    return family_of(_field(value, "loop_id")).encode()


def by_root(value: Value, settings: Settings) -> bytes:
    """Keyed by the root loop of a family of delegated loops (fleet warnings)."""
    return _field(value, "root_loop_id").encode()


def by_event_root(value: Value, settings: Settings) -> bytes:
    """Keyed as the client keys an action event: by its family's root (its own loop id
    when nobody delegated to it), so a family travels on one partition in order."""
    event = value[0] if isinstance(value, list) else value
    if isinstance(event, dict):
        payload = event.get("payload") or {}
        root = payload.get("root_loop_id") or payload.get("parent_loop_id")
        return str(root or event["loop_id"]).encode()
    return str(event.payload.root(event.loop_id)).encode()


def by_tool(value: Value, settings: Settings) -> bytes:
    """Keyed by tool name (outage notices)."""
    return _field(value, "tool").encode()


def by_scope(value: Value, settings: Settings) -> bytes:
    """Keyed by memory scope (``*`` for a maintenance report)."""
    return _field(value, "scope").encode()


def by_memory(value: Value, settings: Settings) -> bytes:
    """Keyed as the client keys memory writes (``publisher.memory_key``)."""
    scope = value["payload"]["scope"]
    return memory_record_key(
        scope, memory_id_for(scope, value["event_id"]), settings.publisher.memory_key
    )


Keying = Literal["loop", "family", "root", "event_root", "tool", "scope", "memory"]
KEYS: dict[Keying, Callable[[Value, Settings], bytes]] = {
    "loop": by_loop,
    "family": by_family,
    "root": by_root,
    "event_root": by_event_root,
    "tool": by_tool,
    "scope": by_scope,
    "memory": by_memory,
}


@dataclass(frozen=True, slots=True)
class Route:
    """Where a named output goes: its topic, what its record is keyed by, its headers."""

    topic: Callable[[TopicSettings], str]
    keyed_by: Keying
    traced: bool = False
    """The record's headers carry the value's ``trace_context`` (W3C)."""

    def key(self, value: Value, settings: Settings) -> bytes:
        """The record key of ``value``."""
        return KEYS[self.keyed_by](value, settings)

    def key_of_loop(self, loop_id: str) -> str | None:
        """The key of every record of this output about ``loop_id`` (None: not one key)."""
        if self.keyed_by == "loop":
            return loop_id
        return family_of(loop_id) if self.keyed_by == "family" else None


OutputName = Literal[
    "warnings",
    "reflection_requests",
    "reflections",
    "loop_completions",
    "decisions",
    "fleet_warnings",
    "tool_outages",
    "advice",
    "memory_writes",
    "memory_lessons",
    "memory_outcomes",
    "actions",
    "verdicts",
]
"""The name of an output a capability may produce (the keys of :data:`ROUTES`)."""

ROUTES: dict[str, Route] = {
    "warnings": Route(lambda t: t.warnings, "loop", traced=True),
    "reflection_requests": Route(lambda t: t.reflection_requests, "loop"),
    "reflections": Route(lambda t: t.reflections, "loop"),
    "loop_completions": Route(lambda t: t.loop_completions, "family"),
    "decisions": Route(lambda t: t.decisions, "family"),
    "fleet_warnings": Route(lambda t: t.fleet_warnings, "root"),
    "tool_outages": Route(lambda t: t.tool_outages, "tool"),
    "advice": Route(lambda t: t.advice, "loop", traced=True),
    "memory_writes": Route(lambda t: t.memory_writes, "memory"),
    "memory_lessons": Route(lambda t: t.memory_lessons, "memory"),
    "memory_outcomes": Route(lambda t: t.memory_outcomes, "scope"),
    "actions": Route(lambda t: t.actions, "event_root"),
    "verdicts": Route(lambda t: t.verdicts, "loop"),
}
"""Every named output a capability may produce."""


class OutputSink(Protocol):
    """Something besides Kafka that receives some named outputs (must not block)."""

    outputs: frozenset[str]
    """The output names it receives."""

    def deliver(self, output: str, value: Value) -> None:
        """Take one output (queue it; do slow work elsewhere)."""


class OutputRouter:
    """Sends named outputs to their topics and to the sinks attached for them."""

    def __init__(self, sink: RecordQueue, settings: Settings) -> None:
        self.sink = sink
        self.settings = settings
        self.topics = {name: route.topic(settings.topics) for name, route in ROUTES.items()}
        self._sinks: dict[str, list[OutputSink]] = {name: [] for name in ROUTES}
        # per name, what emit needs, looked up once (it runs for every warning)
        self._plans = {
            name: (self.topics[name], KEYS[route.keyed_by], route.traced, self._sinks[name])
            for name, route in ROUTES.items()
        }

    def topic(self, output: str) -> str:
        """The topic of named output ``output``."""
        try:
            return self.topics[output]
        except KeyError:
            raise KeyError(f"no output named {output!r}; known: {sorted(ROUTES)}") from None

    def attach(self, sink: OutputSink) -> None:
        """Hand ``sink`` every output it names, from now on."""
        unknown = set(sink.outputs) - set(ROUTES)
        if unknown:
            raise ValueError(f"unknown output name(s) {sorted(unknown)}; known: {sorted(ROUTES)}")
        for name in sink.outputs:
            self._sinks[name].append(sink)

    def sinks(self, output: str) -> list[OutputSink]:
        """The sinks attached for ``output``."""
        return list(self._sinks[output])

    def emit(self, output: str, value: Value, *, encoded: bytes | None = None) -> None:
        """Queue ``value`` on its topic (``encoded``: its bytes, when made already), then
        hand it to the sinks attached for ``output``."""
        topic, key, traced, sinks = self._plans[output]
        self.sink.add(
            topic,
            key(value, self.settings),
            encoded if encoded is not None else codec.dumps(value),
            headers=headers_of(value.get("trace_context")) if traced else (),
        )
        if sinks:
            plain = value if type(value) in (dict, list) else value.model_dump(mode="json")
            for sink in sinks:
                sink.deliver(output, plain)

    def emit_all(self, outputs: Iterable[tuple[str, Value]]) -> None:
        """:meth:`emit` each ``(name, value)``."""
        for output, value in outputs:
            self.emit(output, value)
