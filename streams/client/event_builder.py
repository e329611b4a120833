"""Building action events on the client: validated, result digested, encoded once."""

from __future__ import annotations

import time
from typing import Any

from loopwarden.schemas import codec
from loopwarden.schemas.events import (
    ActionEvent,
    ActionPayload,
    envelope,
    validate_action,
)
from loopwarden.schemas.known_fields import refuse_unknown_fields


def make_action_event(
    loop_id: str,
    action_type: str,
    *,
    event_id: str | None = None,
    occurred_at: float | None = None,
    **payload: Any,
) -> ActionEvent:
    """Build and validate an action event; payload fields as in :class:`ActionPayload`
    (an unknown one raises :class:`EventValidationError`, e.g. ``succes=False``)."""
    refuse_unknown_fields(payload, ActionPayload)  # long text is cut by the schema
    body = {"action_type": action_type, **payload}
    return validate_action(
        envelope(body, loop_id=loop_id, event_id=event_id, occurred_at=occurred_at)
    )


def event_json(event: Any) -> dict[str, Any]:
    """An event model as JSON-ready data, as it travels on its topic (fields that are
    not set are left out, but an action's unknown outcome stays ``success: null``)."""
    data: dict[str, Any] = event.model_dump(mode="json", exclude_none=True)
    if isinstance(event, ActionEvent) and event.payload.success is None:
        data["payload"]["success"] = None  # unknown, not the default (a success)
    return data


def encode_event(event: ActionEvent, published_at: float | None = None) -> bytes:
    """The JSON bytes of ``event`` as it travels on the actions topic, stamped
    ``published_at`` (now unless given)."""
    data = event_json(event)
    data["published_at"] = time.time() if published_at is None else published_at
    return codec.dumps(data)
