"""A task's steps: recorded from action events, then cleaned into a path (seed 004 §3.4).

A step is a small dict (kept in the open task's state while it runs)::

    {"action_type": "input", "target": "search box", "params": {"text": "iPhone 15"},
     "success": true, "duration_ms": 120.0, "signature": "…", "error": null}

Cleaning (§3.4 step 1, "remove repeated clicks, useless waits, error back-outs"):
failed steps (the retry that followed is kept), waits, a back-out together with
the step it backed out of, and immediate repeats of one call are dropped; the
key decision points (§3.4 step 2: navigation, search input, confirmation) are
marked. What was dropped is counted by reason.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from loopwarden.agents.spin.signature import call_signature
from loopwarden.schemas.events import ActionEvent
from loopwarden.settings import DetectionSettings, ExperienceSettings

Step = dict[str, Any]
_TARGET_PARAMS = ("target", "selector", "element", "url", "query", "path")
_WORDS = re.compile(r"[a-z]+")


def step_of(event: ActionEvent, detection: DetectionSettings) -> Step:
    """The step an (already redacted) action event records."""
    payload = event.payload
    return {
        "action_type": payload.action_type,
        "target": target_of(payload.action_name, payload.params),
        "params": payload.params,
        "success": payload.success,
        "duration_ms": payload.duration_ms,
        "error": payload.error_message,
        "signature": call_signature(
            event, detection.volatile_param_keys, detection.volatile_value_pattern
        ),
    }


def target_of(action_name: str | None, params: dict[str, Any]) -> str | None:
    """The control or resource acted on: the action's name, else a target-like parameter."""
    if action_name:
        return action_name
    for key in _TARGET_PARAMS:
        value = params.get(key)
        if isinstance(value, str) and value:
            return value
    return None


@dataclass
class CleanPath:
    """The cleaned steps, and how many were dropped for which reason."""

    steps: list[Step]
    dropped: Counter[str] = field(default_factory=Counter)


def key_point(step: Step, settings: ExperienceSettings) -> str | None:
    """``navigation``, ``input`` or ``confirmation`` for a key decision point, else None."""
    action_type = step["action_type"].lower()
    if action_type in settings.navigation_action_types:
        return "navigation"
    if action_type in settings.input_action_types:
        return "input"
    words = set(_WORDS.findall(action_type)) | set(
        _WORDS.findall((step.get("target") or "").lower())
    )
    if words & settings.confirm_words:
        return "confirmation"
    return None


def clean_path(steps: list[Step], settings: ExperienceSettings) -> CleanPath:
    """The steps a direct replay needs, in order, with key decision points marked."""
    out = CleanPath([])
    kept: list[Step] = []
    for step in steps:
        action_type = step["action_type"].lower()
        if step.get("success") is False:
            out.dropped["failed"] += 1
        elif action_type in settings.wait_action_types:
            out.dropped["wait"] += 1
        elif action_type in settings.back_action_types:
            out.dropped["back_out"] += 1
            if kept:
                kept.pop()
                out.dropped["backed_out_of"] += 1
        elif kept and kept[-1]["signature"] == step["signature"]:
            out.dropped["repeat"] += 1
        else:
            kept.append(step)
    for step in kept:
        out.steps.append(
            {
                "action_type": step["action_type"],
                "target": step.get("target"),
                "params": step.get("params") or {},
                "duration_ms": step.get("duration_ms"),
                "key_point": key_point(step, settings),
            }
        )
    return out


def what_failed(steps: list[Step], reason: str | None, limit: int = 5) -> list[str]:
    """Short lines saying what went wrong in a task's steps (a negative experience's
    advice: what not to do): failed calls with their errors, then calls repeated three
    or more times, then the reason the task gave."""
    lines: list[str] = []
    seen: set[str] = set()
    for step in steps:
        if step.get("success") is False and step["signature"] not in seen:
            seen.add(step["signature"])
            where = f" on {step['target']}" if step.get("target") else ""
            error = f": {step['error']}" if step.get("error") else ""
            lines.append(f"{step['action_type']}{where} failed{error}")
    repeats = Counter(step["signature"] for step in steps)
    for signature, count in repeats.most_common():
        if count < 3:
            break
        step = next(s for s in steps if s["signature"] == signature)
        where = f" on {step['target']}" if step.get("target") else ""
        lines.append(f"{step['action_type']}{where} repeated {count} times without progress")
    if reason:
        lines.append(f"the task failed: {reason}")
    return [line[:300] for line in lines[:limit]]
