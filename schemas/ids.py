"""Deterministic ids: the same cause always yields the same id.

Warnings and reflection requests derive their id from what caused them, so a
consumer can drop a duplicate produced by a worker that reprocessed a record
after a restart (at-least-once delivery).
"""

from __future__ import annotations

import hashlib
import uuid


def derived_id(kind: str, *parts: str) -> str:
    """A 32-hex-digit id that depends only on ``kind`` and ``parts``."""
    return hashlib.blake2b("\x1f".join((kind, *parts)).encode(), digest_size=16).hexdigest()


def new_event_id() -> str:
    """A fresh random event id for a published event."""
    return uuid.uuid4().hex
