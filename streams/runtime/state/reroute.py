"""An event that arrived on another partition than its key's: sent on to the key's own
partition of the re-route topic, carrying its origin, so every key's state lives in
one place whatever the producer did."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from loopwarden.schemas import codec
from loopwarden.schemas.dead_letter import SourcePosition
from loopwarden.schemas.positions import Origin, default_partition, origin_header
from loopwarden.streams.client.event_builder import event_json

E = TypeVar("E")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Reroute:
    """An event to send to its loop's own partition (of the re-route topic)."""

    partition: int
    key: bytes
    value: bytes
    origin: Origin

    @property
    def headers(self) -> list[tuple[str, bytes]]:
        """The record's headers: its origin."""
        return [origin_header(self.origin)]


def reroute_of(event: Any, key: str, partitions: int, origin: Origin) -> Reroute | None:
    """A :class:`Reroute` when ``key`` maps to another partition than ``origin``'s."""
    return reroute_lazily(lambda: event, key, partitions, origin)


def made_once(make: Callable[[], T]) -> Callable[[], T]:
    """``make``, called at most once (``functools.cache`` builds a wrapper per call:
    7 µs, more than the fleet's routing of an event)."""
    made: list[T] = []

    def once() -> T:
        if not made:
            made.append(make())
        return made[0]

    return once


def reroute_lazily(
    make_event: Callable[[], Any], key: str, partitions: int, origin: Origin
) -> Reroute | None:
    """:func:`reroute_of` for an event made only when it moves (a redacted copy: most
    events stay where they are, and redacting one costs more than routing it)."""
    encoded = key.encode()
    target = default_partition(encoded, partitions)
    if target == origin.partition:
        return None
    value = codec.dumps(event_json(make_event()))  # as the client encoded it
    return Reroute(target, encoded, value, origin)


def routed(
    events: Iterable[tuple[int, E]],
    source: SourcePosition,
    origin: Origin | None,
    partitions: int,
    key_of: Callable[[E], str],
    reroutes: list[Reroute],
) -> Iterator[tuple[int, E, Origin]]:
    """The decoded events of one record to apply here, each with its index in the
    record and its position: a
    re-routed record's (``origin``) all of them; otherwise those whose key maps to the
    partition they came from — the others are appended to ``reroutes`` (with
    ``partitions`` 0, nothing is routed: offline runs)."""
    for index, event in events:
        at = origin or Origin(source.partition, source.offset, index)
        if origin is None and partitions:
            moved = reroute_of(event, key_of(event), partitions, at)
            if moved is not None:
                reroutes.append(moved)
                continue
        yield index, event, at
