"""Memory formulas: the seed 002 worked examples, seed 000 §3.4-3.6, batch = scalar."""

import math

import numpy as np
import pytest

from loopwarden.agents.memory.scoring import (
    DIMENSIONS,
    combine_conflict,
    contradiction_confidence,
    cosine_batch,
    cosine_similarity,
    effective_strength,
    effective_strength_batch,
    is_duplicate,
    jaccard,
    keyword_bonus,
    next_layer,
    reciprocal_rank_fusion,
    relevance,
    relevance_batch,
    top_k,
    trust_score,
)


def test_effective_strength_worked_example_promotes():
    strength = effective_strength(0.8, 0.9, 4, 0.05, 10, "short_term")
    expected = 0.8 * 0.9 * (1 + math.log(5)) * math.exp(-0.05 * 10**1.2)
    assert strength == pytest.approx(expected)
    assert strength == pytest.approx(0.851, abs=5e-4)
    assert next_layer(strength, "short_term") == "long_term"


def test_layers_have_a_dead_band():
    assert next_layer(0.7, "short_term") == "long_term"
    assert next_layer(0.3, "long_term") == "short_term"
    assert next_layer(0.5, "long_term") == "long_term"
    assert next_layer(0.5, "short_term") == "short_term"


def test_beta_table_of_the_seed_where_it_agrees_with_its_formula():
    # Seed 002 §1's sensitivity table: its beta=1.0 column matches exp(-0.05·age),
    # but its beta=0.8 and 1.2 columns do not match exp(-0.05·age^beta) (e.g. age 30:
    # table 0.4368 / 0.0786, formula 0.4678 / 0.0517). The code's formula stands.
    assert math.exp(-0.05 * 30) == pytest.approx(0.2231, abs=1e-4)
    assert effective_strength(1, 1, 0, 0.05, 30, "long_term") == pytest.approx(0.4678, abs=1e-4)
    assert effective_strength(1, 1, 0, 0.05, 30, "short_term") == pytest.approx(0.0517, abs=1e-4)
    assert effective_strength(1, 1, 0, 0.05, 1, "short_term") == pytest.approx(0.9512, abs=1e-4)


def test_rrf_worked_example_b_outranks_a():
    fused = reciprocal_rank_fusion(
        {"semantic": ["A", "B"], "full_text": ["B", "A"], "entity": ["B"]}
    )
    assert [item for item, _ in fused] == ["B", "A"]
    scores = dict(fused)
    assert scores["B"] == pytest.approx(1 / 62 + 1 / 61 + 1 / 61)
    assert scores["A"] == pytest.approx(1 / 61 + 1 / 62)


def test_rrf_k_table():
    fused = dict(reciprocal_rank_fusion({"s": ["A", "B"], "f": ["B", "A"], "e": ["C"]}, k=60))
    assert fused["A"] == pytest.approx(0.03252, abs=1e-5)
    assert fused["B"] == pytest.approx(fused["A"])
    assert fused["C"] == pytest.approx(0.01639, abs=1e-5)


def test_trust_worked_example():
    base = 0.8 * 0.5 + (1 - 15 / 90) * 0.15 + (2 / 5) * 0.15 - (1 / 5) * 0.2
    assert trust_score(0.8, 2, 1, 15) == pytest.approx(base) == pytest.approx(0.545)
    assert trust_score(0.8, 2, 4, 15) == pytest.approx(0.425)
    assert trust_score(0.1, 0, 9, 400) == 0.0  # clamped
    assert trust_score(1.0, 9, 0, 0) == pytest.approx(0.8)  # evidence capped at 5


def test_conflict_worked_example():
    assert combine_conflict(0.82, 0.60, True, True) == pytest.approx(0.919)
    assert combine_conflict(0.82, 0.60, True, True) >= 0.55


def test_conflict_from_texts():
    confidence = contradiction_confidence(
        "user prefers SQLite", "user does not prefer SQLite", similarity=0.9
    )
    # tokens {user, prefers, sqlite} vs {user, does, not, prefer, sqlite}: 2 shared / 5
    assert confidence == pytest.approx(0.9 * 0.45 + 0.4 * 0.25 + 0.25 + 0.15)
    # identical text is no contradiction (issue 13; the seed's weights gave it 0.85)
    assert contradiction_confidence("用户喜欢 SQLite", "用户喜欢 SQLite", similarity=1.0) == 0
    # two preferences naming different things: the seed's sum, no polarity flip
    other = contradiction_confidence("用户喜欢 SQLite", "用户喜欢 PostgreSQL", similarity=0.8)
    assert other == pytest.approx(0.8 * 0.45 + 0.5 * 0.25 + 0.15)
    unrelated = contradiction_confidence("deploy failed", "weather is nice", similarity=0.1)
    assert unrelated < 0.55


def test_cosine():
    assert cosine_similarity([1, 0], [1, 0]) == 1.0
    assert cosine_similarity([1, 0], [0, 1]) == 0.0
    assert cosine_similarity([0, 0], [1, 0]) == 0.0
    matrix = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    assert cosine_batch(np.array([1.0, 0.0]), matrix) == pytest.approx([1.0, 2**-0.5, 0.0])


def test_relevance_weights_and_cap():
    scores = dict.fromkeys(DIMENSIONS, 1.0)
    assert relevance(scores) == pytest.approx(1.0)
    one = {"r": 1.0}
    assert relevance(one) == pytest.approx(0.25)
    bonus = keyword_bonus("sqlite lock", "the sqlite lock timed out", ["sqlite"], [])
    assert bonus == pytest.approx(0.1 + 0.08 * 0.5 + 0.05 + 0.03)
    assert relevance(one, "sqlite lock", "the sqlite lock timed out", ["sqlite"]) == (
        pytest.approx(0.25 + bonus)
    )


def test_keyword_bonus_is_capped():
    text = "a b c"
    assert keyword_bonus("a b c", text, ["a b c"], ["a b c"]) == pytest.approx(0.3)


def test_batch_equals_scalar():
    rng = np.random.default_rng(7)
    n = 200
    cols = rng.random((n, 7))
    batch = relevance_batch(cols)
    scalar = [relevance(dict(zip(DIMENSIONS, row, strict=True))) for row in cols]
    assert batch == pytest.approx(scalar)
    imp, tr, dec = rng.random(n), rng.random(n), rng.random(n) * 0.1
    acc, age = rng.integers(0, 20, n).astype(float), rng.random(n) * 90
    long_term = rng.random(n) > 0.5
    strengths = effective_strength_batch(imp, tr, acc, dec, age, long_term)
    expected = [
        effective_strength(
            imp[i],
            tr[i],
            int(acc[i]),
            dec[i],
            age[i],
            "long_term" if long_term[i] else "short_term",
        )
        for i in range(n)
    ]
    assert strengths == pytest.approx(expected)
    order = top_k(batch, 10)
    assert list(order) == list(np.argsort(-batch, kind="stable")[:10])


@pytest.mark.parametrize(
    ("tags", "questions", "content", "duplicate"),
    [
        (0.8, 0.85, 0.0, True),  # exactly at two thresholds
        (0.79, 0.85, 0.9, True),
        (0.8, 0.84, 0.89, False),  # only one holds
        (0.0, 0.0, 1.0, False),
        (1.0, 1.0, 1.0, True),
    ],
)
def test_two_of_three_deduplication(tags, questions, content, duplicate):
    assert is_duplicate(tags, questions, content) is duplicate


def test_jaccard():
    assert jaccard(["a", "b"], ["A", "b"]) == 1.0
    assert jaccard(["a", "b", "c", "d", "e"], ["a", "b", "c", "d"]) == 0.8
    assert jaccard([], []) == 0.0
