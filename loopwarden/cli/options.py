"""Shared CLI options and helpers."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from loopwarden.schemas.flat_events import envelope_from_json

if TYPE_CHECKING:
    from loopwarden.schemas.events import ActionEvent
    from loopwarden.settings import Settings


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
