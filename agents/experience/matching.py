"""Matching a task to experience, in the seed's levels (seed 004 §3.3, §4.2, §7).

1. Exact: the same description hash, success rate above 0.9 → ``direct_replay``.
2. Semantic: top 5 by cosine at or above 0.75; composite similarity
   0.7·semantic + 0.15·app + 0.15·intent above 0.85 → ``adaptive_replay``.
3. Pattern: a generalised pattern whose template the description fits, its slots
   filled from the description → ``guided_exploration``.
4. Otherwise ``reflexion_explore``.

Experiences flagged for re-exploration (success rate below 0.5) are never
replayed; what they and failed explorations teach goes into the advice's
"avoid" list. An experience of another app version is served as experimental.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from loopwarden.agents.experience.slots import match_template, slots_in
from loopwarden.agents.memory.scoring import normalize
from loopwarden.schemas.tasks import Strategy, TaskSpec
from loopwarden.settings import ExperienceSettings

Experience = dict[str, Any]
"""An experience row (see :mod:`loopwarden.storage.experience_table`)."""


def description_hash(text: str) -> str:
    """The Level-1 key: sha1 of the description's lower-case tokens (case, punctuation and
    spacing do not count)."""
    return hashlib.sha1(normalize(text).encode(), usedforsecurity=False).hexdigest()


def _same(a: str | None, b: str | None) -> float | None:
    if not a or not b:
        return None
    return 1.0 if a.strip().casefold() == b.strip().casefold() else 0.0


def app_score(task: TaskSpec, experience: Experience) -> float:
    """1 for the same app, 0 for another; 0.5 when either does not say (unknown)."""
    same = _same(task.app_name, experience.get("app_name"))
    return 0.5 if same is None else same


def intent_score(task: TaskSpec, experience: Experience) -> float:
    """1 for the same intent, 0 for another; 0.5 when either does not say (unknown)."""
    same = _same(task.intent, experience.get("intent"))
    return 0.5 if same is None else same


def composite(semantic: float, app: float, intent: float, settings: ExperienceSettings) -> float:
    """The seed's composite similarity: 70 % semantic, 15 % app, 15 % intent."""
    return (
        settings.semantic_weight * semantic
        + settings.app_weight * app
        + settings.intent_weight * intent
    )


def version_mismatch(task: TaskSpec, experience: Experience) -> bool:
    """Both name an app version and they differ (§7: the replay is experimental)."""
    theirs = experience.get("app_version")
    return bool(task.app_version and theirs and task.app_version != theirs)


def replayable(experience: Experience, settings: ExperienceSettings) -> bool:
    """A successful path not flagged for re-exploration."""
    return (
        experience.get("outcome") == "success"
        and experience["success_rate"] >= settings.reexplore_below
    )


@dataclass
class Match:
    """The route chosen for a task, and what it rests on."""

    strategy: Strategy
    confidence: float = 0.0
    experience: Experience | None = None
    pattern: Experience | None = None
    slots: dict[str, str] = field(default_factory=dict)
    experimental: bool = False
    reexplore: bool = False
    scores: dict[str, float] = field(default_factory=dict)


def choose(
    task: TaskSpec,
    exact: list[Experience],
    semantic: list[tuple[Experience, float]],
    patterns: list[Experience],
    settings: ExperienceSettings,
) -> Match:
    """Route a task (levels 1–4 above). ``exact``: experiences with the task's description
    hash; ``semantic``: (experience, cosine) candidates, best first; ``patterns``: the
    generalised patterns of the task's app (or of every app when it names none).

    A semantic match whose own template fits the description with *other* slot values
    is the same path for a new item: level 3 with the slots filled, not a replay of the
    old item's values. A successful case's template counts as a pattern of one case.
    """
    flagged = [e for e in exact if e.get("outcome") == "success" and not replayable(e, settings)]
    usable = [e for e in exact if replayable(e, settings)]
    if usable:
        best = max(usable, key=lambda e: (e["success_rate"], e["use_count"]))
        if best["success_rate"] > settings.direct_min_success_rate:
            return Match(
                "direct_replay",
                confidence=best["success_rate"],
                experience=best,
                experimental=version_mismatch(task, best),
                scores={"success_rate": best["success_rate"]},
            )
    candidates = [(e, c) for e, c in semantic[: settings.semantic_top_k] if replayable(e, settings)]
    scored = []
    for experience, cosine in candidates:
        if cosine < settings.semantic_threshold:
            continue
        app, intent = app_score(task, experience), intent_score(task, experience)
        scored.append((composite(cosine, app, intent, settings), cosine, experience))
    if scored:
        score, cosine, best = max(scored, key=lambda s: (s[0], s[2]["success_rate"]))
        values = match_template(best["template"], task.task_description)
        new_values = values is not None and not _same_values(values, best.get("slots") or {})
        if score > settings.adaptive_threshold and not new_values:
            return Match(
                "adaptive_replay",
                confidence=round(score, 4),
                experience=best,
                experimental=version_mismatch(task, best),
                scores={"composite": round(score, 4), "semantic": round(cosine, 4)},
            )
    same_app = [e for e, _ in candidates if app_score(task, e) > 0]
    for pattern in [*sorted(patterns, key=lambda p: -p["success_rate"]), *same_app]:
        values = match_template(pattern["template"], task.task_description)
        if values is None:
            continue
        share = len(values) / max(len(slots_in(pattern["template"])), 1)
        return Match(
            "guided_exploration",
            confidence=round(pattern["success_rate"] * share, 4),
            pattern=pattern,
            slots=values,
            experimental=version_mismatch(task, pattern),
            scores={"pattern_success_rate": pattern["success_rate"]},
        )
    return Match("reflexion_explore", reexplore=bool(flagged))


def _same_values(found: dict[str, str], own: dict[str, str]) -> bool:
    return all(own.get(name, "").casefold() == value.casefold() for name, value in found.items())


def ema(rate: float, success: bool, alpha: float) -> float:
    """The success rate after one more replay (exponential moving average, §3.4)."""
    return (1.0 - alpha) * rate + alpha * (1.0 if success else 0.0)
