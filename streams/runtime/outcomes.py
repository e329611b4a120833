"""A keyed outcome sent: dead letters, re-routes, named outputs and verdicts, in order.

The worker's driver (:class:`~loopwarden.streams.runtime.keyed_runner.FaustDriver`) and
the worker in memory (:class:`~loopwarden.streams.runtime.in_memory.InMemoryWorker`)
send what a record produced through this one function, to an :class:`Outlet`: the
Faust app, or topics in memory.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from loopwarden.streams.runtime.dead_letters import DeadLetters
from loopwarden.streams.runtime.outputs import OutputRouter
from loopwarden.streams.runtime.record_queue import RecordQueue
from loopwarden.streams.runtime.state.protocol import KeyedOutcome
from loopwarden.streams.runtime.verdicts import verdicts_of


class Outlet(Protocol):
    """Where a worker sends what its capabilities produced."""

    outputs: OutputRouter
    dead_letters: DeadLetters
    answering_roles: tuple[str, ...]
    """The roles of the worker that answer every action event with a verdict."""

    def reroute(self, topic: str, reroutes: Iterable[Any]) -> None:
        """Queue events for their key's own partition of ``topic`` (a re-route topic)."""


def reroute_to(queue: RecordQueue, topic: str, reroutes: Iterable[Any]) -> None:
    """Queue events for their key's own partition of ``topic`` (a re-route topic); each
    has ``partition``, ``key``, ``value`` and ``headers`` (its origin)."""
    for moved in reroutes:
        queue.add(topic, moved.key, moved.value, partition=moved.partition, headers=moved.headers)


def send_outcome(
    outlet: Outlet,
    outcome: KeyedOutcome,
    reroute_topic: str,
    answer_as: str | None,
    now: float,
) -> None:
    """Send ``outcome``'s dead letters, re-routes and named outputs; with ``answer_as``
    (the role whose verdict answers each event seen), the verdicts of its events too."""
    for letter in outcome.dead_letters:
        outlet.dead_letters.send(letter)
    outlet.reroute(reroute_topic, outcome.reroutes)
    if answer_as is None:
        outlet.outputs.emit_all(outcome.outputs())
        return
    outputs = list(outcome.outputs())
    outlet.outputs.emit_all(outputs)
    roles = outlet.answering_roles or (answer_as,)
    for verdict in verdicts_of(outcome.seen, outputs, answer_as, roles, now):
        outlet.outputs.emit("verdicts", verdict)
