"""Intent-aware routing (seed 002 §3): which retrieval strategies a query deserves.

Patterns are scanned in order (the first match wins), so the stronger intents
come first; a query with no marker is ``general``. Intent markers are stripped
before full-text search so that "why"/"what is" do not dominate the match.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum


class Intent(StrEnum):
    """What kind of question a query is."""

    CAUSAL = "causal"
    TEMPORAL = "temporal"
    PROCEDURAL = "procedural"
    EXPLORATORY = "exploratory"
    FACTUAL = "factual"
    GENERAL = "general"


INTENT_PATTERNS: tuple[tuple[Intent, tuple[str, ...]], ...] = (
    (Intent.CAUSAL, ("为什么", "为何", "导致", "cause", "caused", "why")),
    (Intent.TEMPORAL, ("上周", "最近", "之前", "刚才", "when", "recent", "before")),
    (Intent.PROCEDURAL, ("如何", "怎么", "步骤", "how to", "how do", "step")),
    (Intent.EXPLORATORY, ("关于", "all about", "everything about", "related to")),
    (Intent.FACTUAL, ("什么是", "谁是", "what is", "who is", "which")),
)

_MARKERS = re.compile(
    r"(?i)(为什么|为何|导致|what is|who is|how to|how do|all about|everything about)"
)


@dataclass(frozen=True)
class RetrievalPlan:
    """Strategies to run, in order, and result filters."""

    intent: Intent
    strategies: tuple[str, ...]
    filters: dict[str, str] = field(default_factory=dict)


def classify(query: str) -> Intent:
    """The first intent whose pattern occurs in ``query`` (case-insensitive)."""
    lowered = query.lower()
    for intent, patterns in INTENT_PATTERNS:
        if any(pattern in lowered for pattern in patterns):
            return intent
    return Intent.GENERAL


def plan(query: str) -> RetrievalPlan:
    """The seed's strategy matrix."""
    intent = classify(query)
    if intent is Intent.FACTUAL:
        return RetrievalPlan(intent, ("semantic", "entity", "full_text"))
    if intent is Intent.TEMPORAL:
        return RetrievalPlan(intent, ("semantic", "full_text"), {"sort": "recency"})
    if intent is Intent.CAUSAL:
        return RetrievalPlan(intent, ("semantic", "full_text", "causal_trace"))
    if intent is Intent.EXPLORATORY:
        return RetrievalPlan(intent, ("entity", "semantic", "full_text"))
    if intent is Intent.PROCEDURAL:
        return RetrievalPlan(intent, ("semantic", "full_text"), {"memory_type": "procedural"})
    return RetrievalPlan(intent, ("semantic", "full_text"))


def strip_intent_markers(query: str) -> str:
    """``query`` without its intent markers (for full-text search)."""
    return " ".join(_MARKERS.sub(" ", query).split())
