"""Each record of the actions topic decoded and validated once for every reader in the
worker.

The monitor and the fleet both read every record of the actions topic, and each decoded
and validated it: about 40 µs an event of real traffic, half of the fleet's own cost. A
worker makes one :class:`SharedActionDecodes`
(:class:`~loopwarden.agents.capabilities.WorkerResources`) and hands it to both
processors; each processor made without one has its own. It keeps the validated events
(not redacted) of the last records that had no dead letter, by their value's bytes; the
monitor redacts its copy, the fleet reads it as it is (events are frozen). A record with
a dead letter is not kept: each reader decodes it again and handles what is wrong its
own way (the monitor dead-letters it, the fleet passes it over).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import cachetools

from loopwarden.schemas.dead_letter import SourcePosition
from loopwarden.schemas.events import TASK_EVENT_TYPES, ActionEvent, validate_envelope
from loopwarden.schemas.records import DecodedRecord, decode_record


def validate_unredacted(obj: Any) -> ActionEvent | None:
    """An action event as validated, not redacted; None for a task event (not an action)."""
    if isinstance(obj, dict) and obj.get("type") in TASK_EVENT_TYPES:
        return None
    return validate_envelope(obj, ActionEvent.model_validate)


Events = tuple[tuple[int, ActionEvent], ...]


class SharedActionDecodes:
    """The validated events of the last ``size`` clean records, by value (thread-safe)."""

    def __init__(self, size: int = 2048) -> None:
        self._known: cachetools.LRUCache[tuple[bytes, int], Events] = cachetools.LRUCache(size)
        self._lock = threading.Lock()
        self.decoded = 0
        """Records decoded here (the others were found)."""

    def clean(self, value: bytes | None, max_event_bytes: int) -> Events | None:
        """The record's events if it was decoded here and had no dead letter, else None."""
        if not value:
            return None
        with self._lock:
            return self._known.get((value, max_event_bytes))

    def decode(
        self,
        value: bytes | None,
        key: bytes | None,
        source: SourcePosition,
        max_event_bytes: int,
        finish: Callable[[ActionEvent], Any],
    ) -> DecodedRecord:
        """:func:`decode_record` as the topic's owner reads it, each event passed through
        ``finish`` (the monitor's redaction); a clean record is decoded only once."""
        known = self.clean(value, max_event_bytes)
        if known is None:
            decoded = decode_record(value, key, source, max_event_bytes, validate_unredacted)
            self.decoded += 1
            if decoded.dead_letters or not value:
                decoded.events = [(index, finish(event)) for index, event in decoded.events]
                return decoded
            known = tuple(decoded.events)
            with self._lock:
                self._known[(value, max_event_bytes)] = known
        return DecodedRecord(events=[(index, finish(event)) for index, event in known])
