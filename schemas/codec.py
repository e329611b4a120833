"""The one place that knows how loopwarden encodes JSON (orjson)."""

from __future__ import annotations

from typing import Any

import orjson

from loopwarden.errors import EventDecodeError

_DUMP_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


def dumps(value: Any) -> bytes:
    """Encode ``value`` as compact UTF-8 JSON."""
    return orjson.dumps(value, option=_DUMP_OPTIONS)


def dumps_line(value: Any) -> bytes:
    """Encode ``value`` as one JSON line (with the trailing newline)."""
    return orjson.dumps(value, option=_DUMP_OPTIONS | orjson.OPT_APPEND_NEWLINE)


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Decode JSON, raising :class:`EventDecodeError` with orjson's reason."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise EventDecodeError(f"not valid JSON: {exc}") from exc
