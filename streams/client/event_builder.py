"""Building events on the client: validated, result digested, encoded once."""

from __future__ import annotations

import time
from typing import Any

from loopwarden.schemas import codec
from loopwarden.schemas.completions import (
    CompletionPayload,
    OverridePayload,
    validate_guardrail_event,
)
from loopwarden.schemas.events import (
    ActionEvent,
    ActionPayload,
    envelope,
    validate_action,
)
from loopwarden.schemas.families import family_of
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


def completion_record(
    loop_id: str, alignment_score: float, drift_score: float, **fields: Any
) -> tuple[str, bytes, bytes]:
    """A loop completion (reflection done) as it travels on the loop-completions topic:
    its event id, its key (the loop's family) and its bytes; ``fields`` as in
    :class:`~loopwarden.schemas.completions.CompletionPayload`."""
    refuse_unknown_fields(fields, CompletionPayload)
    payload = {
        "reflection_status": "done",
        "alignment_score": alignment_score,
        "drift_score": drift_score,
        **fields,
    }
    return guardrail_record("loop_complete", loop_id, payload)


def override_record(loop_id: str, override_by: str, **fields: Any) -> tuple[str, bytes, bytes]:
    """A guardrail override of ``loop_id``'s family: event id, key and bytes; ``fields``
    as in :class:`~loopwarden.schemas.completions.OverridePayload`."""
    refuse_unknown_fields(fields, OverridePayload)
    return guardrail_record("guardrail_override", loop_id, {"override_by": override_by, **fields})


def guardrail_record(
    kind: str, loop_id: str, payload: dict[str, Any], event_id: str | None = None
) -> tuple[str, bytes, bytes]:
    """A validated guardrail event of ``kind``: its event id, key (family) and bytes."""
    event = validate_guardrail_event(
        envelope(payload, loop_id=loop_id, kind=kind, event_id=event_id)
    )
    data = event.model_dump(mode="json", exclude_none=True)
    return event.event_id, family_of(loop_id).encode(), codec.dumps(data)
