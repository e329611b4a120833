"""Shared CLI options and helpers."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from loopwarden.schemas.events import ActionEvent
    from loopwarden.settings import Settings

ENVELOPE_KEYS = {"event_id", "loop_id", "occurred_at", "payload"}


def settings_with(bootstrap_servers: str | None = None, **top: Any) -> Settings:
    """Settings from the environment, with CLI overrides applied."""
    from loopwarden.settings import Settings

    settings = Settings()
    update: dict[str, Any] = {k: v for k, v in top.items() if v is not None}
    if bootstrap_servers:
        update["kafka"] = settings.kafka.model_copy(update={"bootstrap_servers": bootstrap_servers})
    return settings.model_copy(update=update) if update else settings


def bootstrap_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--bootstrap-servers`` (default: LOOPWARDEN_KAFKA__BOOTSTRAP_SERVERS)."""

    @click.option(
        "--bootstrap-servers",
        "-b",
        metavar="HOST:PORT[,HOST:PORT]",
        help="Kafka bootstrap servers [env LOOPWARDEN_KAFKA__BOOTSTRAP_SERVERS, "
        "default 127.0.0.1:9092].",
    )
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    return wrapper


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
        envelope = {k: flat.pop(k) for k in list(flat) if k in ENVELOPE_KEYS | {"schema_version"}}
        envelope["payload"] = flat
        obj = envelope
    if isinstance(obj, dict):
        obj.setdefault("event_id", f"{id_prefix}-{line_no}" + (f".{index}" if index else ""))
        obj.setdefault("occurred_at", default_time if default_time is not None else float(line_no))
    return obj


def event_from_json(
    obj: Any, line_no: int, default_time: float | None = None, id_prefix: str = "line"
) -> ActionEvent:
    """The validated (and redacted) action event of one JSON line (see
    :func:`envelope_from_json`)."""
    from loopwarden.schemas.events import validate_action

    return validate_action(envelope_from_json(obj, line_no, default_time, id_prefix))


def publish_id_prefix() -> str:
    """A prefix for the ids of lines published without one, new for every run of
    ``publish``: line 1 of tomorrow's file is not line 1 of today's."""
    import uuid

    return f"{uuid.uuid4().hex[:12]}-line"


def now() -> float:
    """Wall-clock time, for events published without a timestamp."""
    return time.time()
