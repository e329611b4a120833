"""Intent routing and marker stripping (seed 002 §3)."""

import pytest

from loopwarden.agents.memory.routing import Intent, classify, plan, strip_intent_markers


@pytest.mark.parametrize(
    ("query", "intent"),
    [
        ("为什么选择 SQLite", Intent.CAUSAL),
        ("why did the deploy fail", Intent.CAUSAL),
        ("what caused the outage before the release", Intent.CAUSAL),  # order: causal first
        ("最近的部署", Intent.TEMPORAL),
        ("how to rotate the keys", Intent.PROCEDURAL),
        ("everything about sqlite", Intent.EXPLORATORY),
        ("what is the user's database", Intent.FACTUAL),
        ("sqlite", Intent.GENERAL),
    ],
)
def test_classification(query, intent):
    assert classify(query) is intent


def test_strategy_matrix():
    assert plan("why").strategies == ("semantic", "full_text", "causal_trace")
    assert plan("recent deploys").filters == {"sort": "recency"}
    assert plan("how to deploy").filters == {"memory_type": "procedural"}
    assert plan("all about sqlite").strategies[0] == "entity"
    assert plan("sqlite").strategies == ("semantic", "full_text")


def test_markers_are_stripped_for_full_text():
    assert strip_intent_markers("为什么选择 SQLite") == "选择 SQLite"
    assert strip_intent_markers("What is the lock timeout?") == "the lock timeout?"
