"""A consumed record as the audit's replayer reads it (aiokafka's ``ConsumerRecord``'s
fields), for tests that feed the replayer without a broker."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Rec:
    """topic, partition, offset, timestamp (ms), key, value, headers."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()
