"""What makes two actions "the same call": a canonical signature.

The signature covers the action type, its name and its parameters, compared
canonically: keys sorted (argument order is irrelevant), whitespace runs in strings
collapsed, ``"``, ``'`` and backquotes alike. Parameters whose key matches
``detection.volatile_param_keys`` (request ids, nonces, timestamps) are left out,
and parts of string values matching ``detection.volatile_value_pattern`` (UUIDs,
timestamps, long hex ids by default) are masked, so a retried call with a fresh
request id is still the same call. An argument that names a record (``payment_id``,
``order_date``) is part of the call: three refunds of three payments are three calls.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from typing import Any

from loopwarden.schemas import codec
from loopwarden.schemas.events import ActionEvent


@lru_cache(maxsize=32)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _canonical(value: Any, keys: re.Pattern[str], values: re.Pattern[str]) -> Any:
    if isinstance(value, dict):
        return {k: _canonical(v, keys, values) for k, v in value.items() if not keys.search(str(k))}
    if isinstance(value, list):
        return [_canonical(v, keys, values) for v in value]
    if isinstance(value, str):
        return _plain(values.sub("<v>", value))
    return value


def _plain(text: str) -> str:
    """Whitespace runs collapsed and quote marks made alike: ``grep  "x" a`` is
    ``grep 'x' a``."""
    return " ".join(text.split()).replace('"', "'").replace("`", "'")


def call_signature(event: ActionEvent, volatile_keys: str, volatile_values: str) -> str:
    """16 hex digits that are equal for the same call (see the module docstring)."""
    payload = event.payload
    keys, values = _compiled(volatile_keys), _compiled(volatile_values)
    canonical = {
        "t": payload.action_type,
        "n": _plain(values.sub("<v>", payload.action_name)) if payload.action_name else None,
        "p": _canonical(payload.params, keys, values),
    }
    encoded = codec.dumps_sorted(canonical)
    return hashlib.blake2b(encoded, digest_size=8).hexdigest()
