"""The advice a task start gets: strategy, path, slots, what to avoid, and a timeline text."""

from __future__ import annotations

from typing import Any

from loopwarden.agents.experience.matching import Experience, Match
from loopwarden.agents.experience.slots import fill
from loopwarden.schemas.ids import derived_id
from loopwarden.schemas.outputs import HEADER, AdviceRecord

_HEADLINES = {
    "direct_replay": "Done before: replay these {n} steps directly",
    "adaptive_replay": "A similar task was done before: follow these {n} steps, adjusting them",
    "guided_exploration": "A known pattern ({pattern}): use these {n} steps as a guide",
    "reflexion_explore": "No usable experience: explore, and reflect after each failure",
}


def _step_line(number: int, step: dict[str, Any]) -> str:
    target = f" {step['target']}" if step.get("target") else ""
    params = f" {step['params']}" if step.get("params") else ""
    mark = f" [{step['key_point']}]" if step.get("key_point") else ""
    open_slots = f" (fill: {', '.join(step['open_slots'])})" if step.get("open_slots") else ""
    return f"{number}. {step['action_type']}{target}{params}{mark}{open_slots}"


def timeline_message(advice: AdviceRecord) -> str:
    """The text an agent injects into its context."""
    headline = _HEADLINES[advice["strategy"]].format(
        n=len(advice["steps"]), pattern=advice.get("pattern")
    )
    lines = [f"[loopwarden experience] {headline} (confidence {advice['confidence']:.2f})."]
    if advice["experimental"]:
        lines.append("Learned on another app version: treat the path as experimental.")
    if advice["reexplore"]:
        lines.append("The known path for this task has been failing: explore afresh.")
    lines.extend(_step_line(i, step) for i, step in enumerate(advice["steps"], 1))
    if advice["avoid"]:
        lines.append("Avoid what failed before:")
        lines.extend(f"- {line}" for line in advice["avoid"])
    return "\n".join(lines)


def build_advice(
    task_event_id: str,
    loop_id: str,
    match: Match,
    avoid: list[str],
    produced_at: float,
) -> AdviceRecord:
    """The advice record for ``match`` (the schema: :class:`~loopwarden.schemas.tasks.Advice`)."""
    source: Experience | None = match.experience or match.pattern
    steps: list[dict[str, Any]] = []
    experience_ids: list[str] = []
    if match.experience is not None:
        experience_ids = [match.experience["id"]]
        own = match.experience.get("slots") or {}
        steps = fill(match.experience["steps"], {**own, **match.slots})
    elif match.pattern is not None:
        experience_ids = list(match.pattern.get("success_cases") or [match.pattern["id"]])
        steps = fill(match.pattern["steps"], match.slots)
    advice: AdviceRecord = {
        **HEADER,
        "type": "advice",
        "advice_id": derived_id("advice", task_event_id),
        "task_event_id": task_event_id,
        "loop_id": loop_id,
        "strategy": match.strategy,
        "confidence": round(match.confidence, 4),
        "experimental": match.experimental,
        "experience_ids": experience_ids,
        "pattern_id": match.pattern["id"] if match.pattern is not None else None,
        "steps": [{k: v for k, v in step.items() if k != "duration_ms"} for step in steps],
        "pattern": match.pattern["template"] if match.pattern is not None else None,
        "slots": match.slots or (dict(source.get("slots") or {}) if source else {}),
        "avoid": avoid,
        "reexplore": match.reexplore,
        "scores": match.scores,
        "produced_at": produced_at,
        "timeline_message": "",
    }
    advice["timeline_message"] = timeline_message(advice)
    return advice
