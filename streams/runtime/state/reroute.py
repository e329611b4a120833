"""An event that arrived on another partition than its key's: sent on to the key's own
partition of the re-route topic, carrying its origin, so every key's state lives in
one place whatever the producer did."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from loopwarden.schemas import codec
from loopwarden.schemas.positions import Origin, default_partition, origin_header
from loopwarden.streams.client.event_builder import event_json


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
    encoded = key.encode()
    target = default_partition(encoded, partitions)
    if target == origin.partition:
        return None
    value = codec.dumps(event_json(event))  # as the client encoded it
    return Reroute(target, encoded, value, origin)
