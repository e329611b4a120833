"""The deterministic analysis: what the analyst concludes without a model.

- semantic spin check: the same action type with near-identical parameters, or
  the same error again and again, is a logic spin;
- action reflection: a failure gets the failure recommendations, a spin the
  seed's Layer 1 suggestions.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Any

from loopwarden.agents.spin import texts
from loopwarden.schemas import codec


@dataclass(frozen=True, slots=True)
class Verdict:
    """The seed's structured analysis: is_spinning, reason, suggestions, next_actions."""

    is_spinning: bool
    reason: str
    suggestions: list[str] = field(default_factory=list)
    next_actions: list[str] = field(default_factory=list)


def param_similarity(a: Any, b: Any) -> float:
    """0..1 similarity of two parameter objects (canonical JSON, character matching)."""
    left, right = codec.dumps(a or {}).decode(), codec.dumps(b or {}).decode()
    if left == right:
        return 1.0
    return SequenceMatcher(None, left, right, autojunk=False).ratio()


def semantic_spin(
    actions: Sequence[dict[str, Any]], *, similarity: float = 0.9, language: str = "en"
) -> Verdict:
    """Layer 2 without a model: near-identical repeats or a repeated error."""
    suggestions = list(texts.LAYER1_SUGGESTIONS[language])
    if len(actions) < 2:
        return Verdict(False, "not enough actions to compare")
    errors = [a.get("error_message") for a in actions]
    if errors[0] and all(e == errors[0] for e in errors):
        return Verdict(
            True,
            f"the same error repeated {len(actions)} times: {errors[0]}",
            suggestions,
            [
                "read the error and change the approach before retrying",
                "check permissions, paths and inputs the action depends on",
            ],
        )
    types = {a.get("action_type") for a in actions}
    scores = [
        param_similarity(a.get("params"), b.get("params")) for a, b in itertools.pairwise(actions)
    ]
    if len(types) == 1 and min(scores) >= similarity:
        return Verdict(
            True,
            f"{len(actions)} '{next(iter(types))}' actions with near-identical parameters "
            f"(similarity >= {similarity:.2f}) made no progress",
            suggestions,
            [
                f"stop repeating '{next(iter(types))}' with the same parameters",
                "try a different action type or change the inputs substantially",
            ],
        )
    return Verdict(False, "the repeated actions vary their parameters; no logic spin")


def reflect(reflection: dict[str, Any], language: str = "en") -> Verdict:
    """An action reflection without a model: the snapshot's own findings."""
    action_type = reflection["action_type"]
    if reflection.get("success", True) is False:
        suggestions = list(
            texts.failure_suggestions(language, action_type, reflection.get("error_message"))
        )
        return Verdict(
            bool(reflection.get("is_spinning")),
            reflection.get("error_message") or f"action '{action_type}' failed",
            suggestions,
            ["inspect the failure before the next action"],
        )
    if reflection.get("is_spinning"):
        return Verdict(
            True,
            reflection.get("spin_reason") or "spinning",
            list(texts.LAYER1_SUGGESTIONS[language]),
            ["choose a different action type"],
        )
    return Verdict(False, "action succeeded", list(reflection.get("suggestions") or []), [])
