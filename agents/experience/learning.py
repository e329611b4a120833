"""A finished task → a TaskExperience row (seed 004 §3.1, §3.4 "experience extraction").

Only explorations are learned (§4.2: learning after a replay would store the
same path again): a successful exploration becomes a positive experience with
its cleaned, slot-abstracted path; a failed one (the agent stopped for a spin, a
guardrail finalization or any other failure) a negative experience that keeps
what failed: failed calls, calls repeated three times or more, the reason.
The id derives from the task's start event, so the same loop processed again
stores nothing twice.
"""

from __future__ import annotations

from typing import Any

from loopwarden.agents.experience.matching import description_hash
from loopwarden.agents.experience.slots import abstract
from loopwarden.agents.experience.steps import clean_path, what_failed
from loopwarden.agents.experience.tasks import OpenTask
from loopwarden.schemas.ids import derived_id
from loopwarden.settings import ExperienceSettings

LEARNED_STRATEGIES = frozenset({"reflexion_explore", "guided_exploration"})
"""Routes whose runs are explorations (a replayed path is not learned again)."""


def experience_id(loop_id: str, task_event_id: str) -> str:
    """The id of the experience a task's run teaches."""
    return derived_id("experience", loop_id, task_event_id)


def learnable(task: OpenTask) -> bool:
    """Whether the end of ``task`` teaches a new experience: explorations only (a
    replay's outcome updates the success rate of the experience it followed)."""
    return task.strategy in LEARNED_STRATEGIES


def build_experience(
    task: OpenTask,
    success: bool,
    ended_at: float,
    settings: ExperienceSettings,
    *,
    feedback_score: float | None = None,
    reason: str | None = None,
) -> dict[str, Any]:
    """The experience row (without its vector) a finished task teaches."""
    spec = task.spec
    path = clean_path(task.steps, settings)
    template, steps, slots = abstract(spec["task_description"], path.steps)
    positive = success
    avoid = [] if positive else what_failed(task.steps, reason)
    return {
        "id": experience_id(task.loop_id, task.event_id),
        "loop_id": task.loop_id,
        "task_event_id": task.event_id,
        "task_description": spec["task_description"],
        "description_hash": description_hash(spec["task_description"]),
        "template": template,
        "intent": spec.get("intent"),
        "app_name": spec.get("app_name"),
        "app_version": spec.get("app_version"),
        "device_info": spec.get("device_info") or {},
        "tags": list(spec.get("tags") or []),
        "steps": steps if positive else [],
        "slots": slots,
        "avoid": avoid,
        "outcome": "success" if positive else "failure",
        "recorded_steps": task.recorded,
        "total_steps": len(steps) if positive else 0,
        "total_duration_ms": float(sum(s.get("duration_ms") or 0.0 for s in steps)),
        "dropped": dict(path.dropped),
        "truncated": task.truncated,
        "success_rate": 1.0 if positive else 0.0,
        "use_count": 0,
        "replay_successes": 0,
        "replay_failures": 0,
        "feedback_score": feedback_score,
        "created_at": ended_at,
        "last_used_at": ended_at,
        "applied_feedback": [],
    }
