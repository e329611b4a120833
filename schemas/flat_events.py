"""The flat form of an action event, as JSON lines and datasets write it:
``{"loop_id": …, "action_type": …, <payload fields>}`` beside the full envelope."""

from __future__ import annotations

from typing import Any

from loopwarden.schemas.events import ENVELOPE_FIELDS


def envelope_from_json(
    obj: Any,
    line_no: int,
    default_time: float | None = None,
    id_prefix: str = "line",
    index: int = 0,
) -> Any:
    """The event envelope of one JSON line, not yet validated.

    A line is a full envelope or the flat form ``{"loop_id": …, "action_type": …,
    <payload fields>}``; a missing ``event_id`` becomes ``<id_prefix>-N`` (``-N.I`` for
    the I-th element of an array after the first) and a missing
    ``occurred_at`` becomes ``default_time`` (or N seconds, so offline runs are
    deterministic). Anything that is not an object is returned as it is, for the
    validator to reject.
    """
    if isinstance(obj, dict) and "payload" not in obj:
        flat = dict(obj)
        envelope = {k: flat.pop(k) for k in list(flat) if k in ENVELOPE_FIELDS}
        envelope["payload"] = flat
        obj = envelope
    if isinstance(obj, dict):
        obj.setdefault("event_id", f"{id_prefix}-{line_no}" + (f".{index}" if index else ""))
        obj.setdefault("occurred_at", default_time if default_time is not None else float(line_no))
    return obj
