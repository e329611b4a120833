"""Failed and loop-ending actions as memories (seed 000 §3.7.1), pure.

The loop monitor publishes them as memory writes on the learning scope, in
``detection.language`` (the seed's Chinese with ``zh``). A failure is learnt once per
loop: the same call failing the same way again (:func:`lesson_key`, volatile tokens
masked) teaches nothing new, and a loop stuck on one failure made a lesson of every
attempt — a third of the failures of the real runs, each embedded by the memory role
(issue 71) and filling a search's first results with copies of one lesson.
"""

from __future__ import annotations

import zlib

from loopwarden.agents.monitor.state import LoopState
from loopwarden.agents.spin import texts
from loopwarden.agents.spin.textscan import mask_volatile
from loopwarden.schemas import codec
from loopwarden.schemas.events import ActionEvent
from loopwarden.schemas.ids import derived_id
from loopwarden.schemas.outputs import HEADER, LessonRecord
from loopwarden.settings import DetectionSettings


def _change(event: ActionEvent) -> str:
    payload = event.payload
    change = f"action {payload.action_type} {codec.dumps(payload.params).decode()}"
    if payload.failed:
        return f"{change} -> failed: {payload.error_message or 'unknown error'}"
    return f"{change} -> succeeded"


def lesson_key(event: ActionEvent) -> str:
    """What makes two failures the same lesson: the call and its error, volatile tokens
    (ids, times, temporary paths, numbers) masked, as a short digest."""
    return format(zlib.crc32(mask_volatile(_change(event)).encode()), "08x")


def lesson(
    state: LoopState,
    event: ActionEvent,
    settings: DetectionSettings,
    *,
    during_outage: bool = False,
) -> LessonRecord:
    """Seed 000 §3.7.1: the iteration's change as a memory, in the seed's contextual form.

    ``during_outage``: the failure is covered by a tool outage the fleet role declared
    (the tool failed for everyone): still a memory, tagged ``during_tool_outage`` so a
    reader can tell the tool's bad hour from the agent's mistake."""
    payload = event.payload
    change = _change(event)
    status = "failed" if payload.failed else ("completed" if payload.terminated else "running")
    content = texts.lesson_text(
        settings.language,
        state.iteration,
        state.loop_id,
        change,
        status,
        payload.terminated,
        payload.error_message or "",
    )
    record: LessonRecord = {
        **HEADER,
        "type": "memory_write",
        "event_id": derived_id("lesson", state.loop_id, event.event_id),
        "occurred_at": event.occurred_at,
        "payload": {
            "scope": settings.learning_scope,
            "content": content,
            "tags": [
                "learning_from_failure" if payload.failed else "task_outcome",
                payload.action_type,
                *(("during_tool_outage",) if during_outage else ()),
            ],
            "potential_questions": [
                f"why did {payload.action_type} fail?"
                if payload.failed
                else f"how did {payload.action_type} end the task?"
            ],
            "entity_refs": [payload.action_type],
            "memory_type": "episodic",
            "scores": {
                "r": 0.6,
                "a": 0.8 if payload.failed else 0.5,
                "t": 0.5,
                "c": 0.4,
                "o": 0.8,
                "p": 0.0,
                "e": 0.0,
            },
            "source_reliability": 0.8,
            "source_loop_id": state.loop_id,
            "source_event_id": event.event_id,
        },
    }
    return record
