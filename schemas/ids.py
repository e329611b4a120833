"""Deterministic ids: the same cause always yields the same id.

Warnings and reflection requests derive their id from what caused them, so a
consumer can drop a duplicate produced by a worker that reprocessed a record
after a restart (at-least-once delivery).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence


def derived_id(kind: str, *parts: str) -> str:
    """A 32-hex-digit id that depends only on ``kind`` and ``parts``."""
    return hashlib.blake2b("\x1f".join((kind, *parts)).encode(), digest_size=16).hexdigest()


def new_event_id() -> str:
    """A fresh random event id for a published event."""
    return uuid.uuid4().hex


def derived_ids(kind: str, *columns: Sequence[str]) -> list[str]:
    """:func:`derived_id` of each row of ``columns`` (one part per column), for bulk
    paths: the hash of the shared prefix is computed once and copied per row."""
    prefix = hashlib.blake2b(f"{kind}\x1f".encode(), digest_size=16)
    out = []
    for parts in zip(*columns, strict=True):
        digest = prefix.copy()
        digest.update("\x1f".join(parts).encode())
        out.append(digest.hexdigest())
    return out
