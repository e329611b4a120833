"""A consumed record as a capability's handler sees it, from a Faust message or a bundle.

Every handler, the error policy and the dead letters speak of records through
:class:`Record`: its value and key bytes, its headers and where it was read
(:class:`~loopwarden.schemas.dead_letter.SourcePosition`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from loopwarden.schemas.dead_letter import SourcePosition
from loopwarden.streams.runtime.bundles import RecordBundle
from loopwarden.streams.runtime.state.protocol import KeyedRecord


@dataclass(frozen=True, slots=True)
class Record(KeyedRecord):
    """A consumed record as handlers see it (a keyed processor's record, made from a
    Faust message or a bundle's member)."""

    @classmethod
    def all_of(cls, message: Any) -> list[Record]:
        """The records of a Faust message: one, or those of its :class:`RecordBundle`
        (made once and shared by the agents that read the bundle: do not change it)."""
        value = message.value
        if isinstance(value, RecordBundle):
            if not value.opened:
                value.opened.extend(cls.of_consumed(record) for record in value)
            return value.opened
        return [cls.of(message)]

    @classmethod
    def of_consumed(cls, record: Any) -> Record:
        """From an aiokafka ``ConsumerRecord`` (a bundle's member)."""
        return cls(
            record.value,
            record.key,
            list(record.headers or ()),
            SourcePosition(record.topic, record.partition, record.offset, record.timestamp),
        )

    @classmethod
    def of(cls, message: Any) -> Record:
        """From a Faust message."""
        return cls(
            message.value,
            message.key,
            list(message.headers or ()),
            SourcePosition(
                message.topic,
                message.partition,
                message.offset,
                int(message.timestamp * 1000) if message.timestamp else None,
            ),
        )
