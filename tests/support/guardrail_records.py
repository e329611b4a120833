"""Guardrail input records for the tests, encoded as they travel on their topic."""

from __future__ import annotations

from loopwarden.schemas import codec


def completion(event_id: str, loop_id: str, at: float) -> bytes:
    """A loop completion whose scores call for a rerun (alignment 0.2, drift 0.8)."""
    return codec.dumps(
        {
            "event_id": event_id,
            "type": "loop_complete",
            "loop_id": loop_id,
            "occurred_at": at,
            "payload": {"reflection_status": "done", "alignment_score": 0.2, "drift_score": 0.8},
        }
    )
