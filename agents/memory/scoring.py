"""Memory scoring formulas (seed 000 §3.4-3.6, seed 002 §1, §2, §4, §5, §7), pure.

Scalar functions follow the seeds' code line by line; the ``*_batch`` variants
compute the same over numpy columns (a whole table or a slice at once).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from loopwarden.settings import MemorySettings

FloatArray = npt.NDArray[np.float64]

_DEFAULT = MemorySettings()
DIMENSIONS = ("r", "c", "t", "a", "p", "o", "e")
"""C.O.R.E. P.A.C.T. score columns in the order of their weights."""


# -- forgetting curve (seed 002 §1) ------------------------------------------------------------


def effective_strength(
    importance: float,
    trust: float,
    access_count: int,
    decay_rate: float,
    age_days: float,
    layer: str,
    cfg: MemorySettings = _DEFAULT,
) -> float:
    """importance · trust · (1 + ln(1 + access)) · exp(−decay · age^β), β by layer."""
    access_boost = 1.0 + math.log1p(max(access_count, 0))
    beta = cfg.long_term_beta if layer == "long_term" else cfg.short_term_beta
    return importance * trust * access_boost * math.exp(-decay_rate * (age_days**beta))


def effective_strength_batch(
    importance: FloatArray,
    trust: FloatArray,
    access_count: FloatArray,
    decay_rate: FloatArray,
    age_days: FloatArray,
    long_term: npt.NDArray[np.bool_],
    cfg: MemorySettings = _DEFAULT,
) -> FloatArray:
    """:func:`effective_strength` over columns."""
    beta = np.where(long_term, cfg.long_term_beta, cfg.short_term_beta)
    boost = 1.0 + np.log1p(np.maximum(access_count, 0))
    return importance * trust * boost * np.exp(-decay_rate * np.power(age_days, beta))


def next_layer(strength: float, layer: str, cfg: MemorySettings = _DEFAULT) -> str:
    """≥ 0.7 → long_term, ≤ 0.3 → short_term, otherwise unchanged (no flapping)."""
    if strength >= cfg.promote_threshold:
        return "long_term"
    if strength <= cfg.demote_threshold:
        return "short_term"
    return layer


# -- reciprocal rank fusion (seed 002 §2) ------------------------------------------------------


def reciprocal_rank_fusion(
    rankings: Mapping[str, Sequence[str]], k: int = 60
) -> list[tuple[str, float]]:
    """Σ 1/(k + rank) over the strategies (rank from 1), best first; ties by id."""
    scores: dict[str, float] = {}
    for ranked_ids in rankings.values():
        for rank, item_id in enumerate(ranked_ids, start=1):
            scores[item_id] = scores.get(item_id, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


# -- trust (seed 002 §4) -----------------------------------------------------------------------


def trust_score(
    source_reliability: float,
    corroboration_count: int = 0,
    contradiction_count: int = 0,
    age_days: float = 0.0,
    cfg: MemorySettings = _DEFAULT,
) -> float:
    """0.5·source + 0.15·recency(90 d) + 0.15·corroboration(cap 5) − 0.2·contradiction(cap 5)."""
    recency = max(1.0 - min(age_days, cfg.trust_recency_days) / cfg.trust_recency_days, 0.0)
    cap = float(cfg.trust_evidence_cap)
    corroboration = min(float(corroboration_count), cap) / cap
    contradiction = min(float(contradiction_count), cap) / cap
    score = (
        source_reliability * cfg.trust_source_weight
        + recency * cfg.trust_recency_weight
        + corroboration * cfg.trust_corroboration_weight
        - contradiction * cfg.trust_contradiction_weight
    )
    return max(0.0, min(1.0, score))


def trust_scores(
    source_reliability: FloatArray, age_days: FloatArray, cfg: MemorySettings = _DEFAULT
) -> FloatArray:
    """:func:`trust_score` of new memories (no corroboration or contradiction yet)."""
    days = np.clip(age_days, 0.0, cfg.trust_recency_days)
    recency = np.maximum(1.0 - days / cfg.trust_recency_days, 0.0)
    score = source_reliability * cfg.trust_source_weight + recency * cfg.trust_recency_weight
    return np.clip(score, 0.0, 1.0)


# -- conflicts (seed 002 §5) -------------------------------------------------------------------

NEGATION_MARKERS = ("不", "没", "不是", "不会", "never", "not", "no ")
PREFERENCE_MARKERS = ("喜欢", "偏好", "prefer", "prefers", "using", "uses", "选择", "selected")
_TOKENS = re.compile(r"[\u4e00-\u9fff\w]+")


def normalize(text: str) -> str:
    """Lower-case tokens (Han characters and word characters) joined by spaces."""
    return " ".join(_TOKENS.findall(text.lower()))


def token_overlap(left: str, right: str) -> float:
    """|tokens ∩| / max(|tokens|): the Go side's similarityRatio."""
    a, b = set(left.split()), set(right.split())
    if not a or not b:
        return 0.0
    return len(a & b) / max(len(a), len(b))


def _contains_any(text: str, markers: Iterable[str]) -> bool:
    padded = f" {text} "
    return any(marker in padded for marker in markers)


def contradiction_confidence(
    left: str, right: str, similarity: float, cfg: MemorySettings = _DEFAULT
) -> float:
    """similarity·0.45 + overlap·0.25 + 0.25 (opposite polarity) + 0.15 (a preference), ≤ 1.

    Two deliberate deviations from seed 002 §5 (its weights alone put two wordings
    of one fact at 0.65–0.85): identical text is 0, and without a sign of
    disagreement — opposite polarity, or a preference where each side names
    something the other does not — the confidence is 0.
    """
    left_norm, right_norm = normalize(left), normalize(right)
    if left_norm == right_norm:
        return 0.0
    opposite = _contains_any(left_norm, NEGATION_MARKERS) != _contains_any(
        right_norm, NEGATION_MARKERS
    )
    preference = _contains_any(left_norm, PREFERENCE_MARKERS) or _contains_any(
        right_norm, PREFERENCE_MARKERS
    )
    left_tokens, right_tokens = set(left_norm.split()), set(right_norm.split())
    differing = bool(left_tokens - right_tokens) and bool(right_tokens - left_tokens)
    if not (opposite or (preference and differing)):
        return 0.0
    return combine_conflict(
        similarity, token_overlap(left_norm, right_norm), opposite, preference, cfg
    )


def combine_conflict(
    similarity: float,
    overlap: float,
    opposite_polarity: bool,
    preference: bool,
    cfg: MemorySettings = _DEFAULT,
) -> float:
    """The seed's weighted sum, from its four signals."""
    value = (
        similarity * cfg.conflict_similarity_weight
        + overlap * cfg.conflict_overlap_weight
        + (cfg.conflict_polarity_bonus if opposite_polarity else 0.0)
        + (cfg.conflict_preference_bonus if preference else 0.0)
    )
    return min(value, 1.0)


# -- cosine (seed 002 §7) ----------------------------------------------------------------------


def cosine_similarity(a: Sequence[float] | FloatArray, b: Sequence[float] | FloatArray) -> float:
    """a·b / (|a||b|); 0 when either vector is zero."""
    va, vb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    denominator = float(np.linalg.norm(va) * np.linalg.norm(vb))
    return float(va @ vb / denominator) if denominator else 0.0


def cosine_batch(query: FloatArray, matrix: FloatArray) -> FloatArray:
    """Cosine of ``query`` against every row of ``matrix``."""
    norms = np.linalg.norm(matrix, axis=1) * np.linalg.norm(query)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(norms > 0, matrix @ query / norms, 0.0)


# -- relevance and keyword bonus (seed 000 §3.4-3.5) -------------------------------------------


def weights(cfg: MemorySettings = _DEFAULT) -> FloatArray:
    """The C.O.R.E. P.A.C.T. weights in :data:`DIMENSIONS` order."""
    return np.array(
        [
            cfg.weight_r,
            cfg.weight_c,
            cfg.weight_t,
            cfg.weight_a,
            cfg.weight_p,
            cfg.weight_o,
            cfg.weight_e,
        ]
    )


def keywords(text: str) -> list[str]:
    """The distinct normalized tokens of ``text``, in order."""
    return list(dict.fromkeys(normalize(text).split()))


def match_score(query: str, text: str) -> float:
    """Share of the query's keywords found in ``text``."""
    wanted = keywords(query)
    if not wanted:
        return 0.0
    present = set(normalize(text).split())
    return sum(1 for word in wanted if word in present) / len(wanted)


def keyword_bonus(
    query: str,
    content: str,
    tags: Sequence[str] = (),
    questions: Sequence[str] = (),
    cfg: MemorySettings = _DEFAULT,
) -> float:
    """0.1·content + 0.08·tags + 0.05·questions + 0.05 (any) + 0.03 (all), capped at 0.3."""
    content_score = match_score(query, content)
    bonus = content_score * cfg.keyword_content_weight
    bonus += match_score(query, " ".join(tags)) * cfg.keyword_tag_weight
    bonus += match_score(query, " ".join(questions)) * cfg.keyword_question_weight
    if content_score > 0:
        bonus += cfg.keyword_presence_bonus
    if content_score == 1.0:
        bonus += cfg.keyword_all_bonus
    return min(cfg.keyword_bonus_cap, bonus)


def relevance(
    scores: Mapping[str, float],
    query: str = "",
    content: str = "",
    tags: Sequence[str] = (),
    questions: Sequence[str] = (),
    cfg: MemorySettings = _DEFAULT,
) -> float:
    """min(1, Σ weight·score + keyword bonus) — seed 000 §3.4."""
    base = float(weights(cfg) @ np.array([scores.get(d, 0.0) for d in DIMENSIONS]))
    bonus = keyword_bonus(query, content, tags, questions, cfg) if query else 0.0
    return min(1.0, base + bonus)


def relevance_batch(
    score_columns: FloatArray, bonus: FloatArray | None = None, cfg: MemorySettings = _DEFAULT
) -> FloatArray:
    """:func:`relevance` for an (n, 7) matrix of scores plus an optional bonus column."""
    base = score_columns @ weights(cfg)
    return np.minimum(1.0, base if bonus is None else base + bonus)


def top_k(scores: FloatArray, k: int) -> npt.NDArray[np.intp]:
    """Indices of the ``k`` highest scores, best first (argpartition, then sort)."""
    if k <= 0 or scores.size == 0:
        return np.empty(0, dtype=np.intp)
    k = min(k, scores.size)
    part = np.argpartition(-scores, k - 1)[:k]
    return part[np.argsort(-scores[part], kind="stable")]


# -- de-duplication (seed 000 §3.6) ------------------------------------------------------------


def jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    """|A ∩ B| / |A ∪ B| of two tag sets (0 when both are empty)."""
    sa, sb = {t.lower() for t in a}, {t.lower() for t in b}
    union = sa | sb
    return len(sa & sb) / len(union) if union else 0.0


def is_duplicate(
    tag_overlap: float,
    question_similarity: float,
    content_similarity: float,
    cfg: MemorySettings = _DEFAULT,
    *,
    has_tags: bool = True,
    has_questions: bool = True,
) -> bool:
    """Two of the three dimensions at or above their thresholds make a duplicate.

    A dimension votes only when both memories have it (deviation from seed 002:
    a memory without questions would otherwise vote twice with its content);
    with fewer than three dimensions, every one that exists must agree.
    """
    votes = [content_similarity >= cfg.content_similarity_threshold]
    if has_tags:
        votes.append(tag_overlap >= cfg.tag_overlap_threshold)
    if has_questions:
        votes.append(question_similarity >= cfg.question_similarity_threshold)
    return sum(votes) >= (2 if len(votes) == 3 else len(votes))
