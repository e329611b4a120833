"""A new memory's stored row and outcome, one at a time or as Arrow columns.

The write path builds rows one by one (each write may change the next one's
checks); bulk paths (``memory import``, stream writes with
``memory.write_checks=deferred``) build a whole batch as Arrow columns with
numpy — the same values (tested), without a Python dict per row. Writes reach
here redacted (:meth:`MemoryWrite.redacted`, a no-op for a write the validator
already redacted); the texts stored are the write's.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter
from typing import Any

import numpy as np
import pyarrow as pa

from loopwarden.agents.memory.embedding import Embedder
from loopwarden.agents.memory.scoring import (
    DIMENSIONS,
    relevance,
    relevance_batch,
    trust_score,
    trust_scores,
)
from loopwarden.schemas.ids import derived_id
from loopwarden.schemas.memory import MemoryWrite
from loopwarden.settings import MemorySettings

DAY = 86_400.0


def content_vectors(writes: Sequence[MemoryWrite], embedder: Embedder) -> np.ndarray:
    """Content vectors: the write's own (normalised) or the embedder's, only for the
    writes that carry none."""
    vectors = np.zeros((len(writes), embedder.dims), dtype=np.float32)
    to_embed, supplied = [], []
    for i, write in enumerate(writes):
        vector = write.payload.embedding
        if vector is None:
            to_embed.append(i)
        elif len(vector) != embedder.dims:
            raise ValueError(
                f"event {write.event_id}: embedding has {len(vector)} dimensions, "
                f"the memory table {embedder.dims}"
            )
        else:
            supplied.append(i)
    if to_embed:
        vectors[to_embed] = embedder.embed([writes[i].payload.content for i in to_embed])
    if supplied:
        given = np.stack([writes[i].payload.embedding for i in supplied])
        norms = np.linalg.norm(given, axis=1, keepdims=True)
        vectors[supplied] = given / np.where(norms > 0, norms, 1.0)
    return vectors


def questions_vectors(
    writes: Sequence[MemoryWrite], vectors: np.ndarray, embedder: Embedder
) -> np.ndarray:
    """The questions' vector, or the content's for a write without questions (it
    casts no question vote then: see ``is_duplicate``)."""
    result = vectors.copy()
    asked = [i for i, w in enumerate(writes) if w.payload.potential_questions]
    if asked:
        texts = [" ".join(writes[i].payload.potential_questions) for i in asked]
        result[asked] = embedder.embed(texts)
    return result


def new_row(
    write: MemoryWrite,
    memory_id: str,
    vector: np.ndarray,
    question_vector: np.ndarray,
    cfg: MemorySettings,
    now: float,
) -> dict[str, Any]:
    """The stored row of a new memory (trust computed)."""
    p = write.payload
    scores = p.scores.model_dump()
    row = {
        "id": memory_id,
        "scope": p.scope,
        "content": p.content,
        "tags": list(p.tags),
        "potential_questions": list(p.potential_questions),
        "entity_refs": [e.lower() for e in p.entity_refs],
        "memory_type": p.memory_type,
        "layer": p.layer,
        **{d: float(scores[d]) for d in DIMENSIONS},
        "importance": p.importance if p.importance is not None else relevance(scores),
        "source_reliability": p.source_reliability,
        "corroboration_count": 0,
        "contradiction_count": 0,
        "corroborated_by": [],
        "access_count": 0,
        "last_access_at": None,
        "created_at": write.occurred_at,
        "updated_at": now,
        "decay_rate": cfg.default_decay_rate,
        "deleted": False,
        "source_loop_id": p.source_loop_id,
        "source_event_id": p.source_event_id,
        "vector": vector,
        "question_vector": question_vector,
    }
    row["trust"] = row_trust(row, now, cfg)
    return row


def row_trust(row: dict[str, Any], now: float, cfg: MemorySettings) -> float:
    """Seed 002 §4 trust of a stored row."""
    age_days = max((now - (row.get("created_at") or now)) / DAY, 0.0)
    return trust_score(
        row["source_reliability"],
        int(row["corroboration_count"]),
        int(row["contradiction_count"]),
        age_days,
        cfg,
    )


def new_rows_table(
    writes: Sequence[MemoryWrite],
    ids: Sequence[str],
    vectors: np.ndarray,
    question_vectors: np.ndarray,
    cfg: MemorySettings,
    now: float,
    schema: pa.Schema,
) -> pa.Table:
    """:func:`new_row` for a batch, as Arrow columns of ``schema`` (no per-row dicts)."""
    n = len(writes)
    payloads = [w.payload for w in writes]
    score_of = attrgetter(*DIMENSIONS)
    scores = np.array([score_of(p.scores) for p in payloads], dtype=np.float64).reshape(
        n, len(DIMENSIONS)
    )
    given = np.array(
        [np.nan if p.importance is None else p.importance for p in payloads], dtype=np.float64
    )
    importance = np.where(np.isnan(given), relevance_batch(scores, cfg=cfg), given)
    reliability = np.array([p.source_reliability for p in payloads], dtype=np.float64)
    created = np.array([w.occurred_at for w in writes], dtype=np.float64)
    zeros = np.zeros(n, dtype=np.int32)
    strings = pa.list_(pa.string())
    dims = vectors.shape[1]
    columns: dict[str, Any] = {
        "id": pa.array(ids, pa.string()),
        "scope": pa.array([p.scope for p in payloads], pa.string()),
        "content": pa.array([p.content for p in payloads], pa.string()),
        "tags": pa.array([p.tags for p in payloads], strings),
        "potential_questions": pa.array([p.potential_questions for p in payloads], strings),
        "entity_refs": pa.array([[e.lower() for e in p.entity_refs] for p in payloads], strings),
        "memory_type": pa.array([p.memory_type for p in payloads], pa.string()),
        "layer": pa.array([p.layer for p in payloads], pa.string()),
        **{d: pa.array(scores[:, i]) for i, d in enumerate(DIMENSIONS)},
        "importance": pa.array(importance),
        "source_reliability": pa.array(reliability),
        "trust": pa.array(trust_scores(reliability, (now - created) / DAY, cfg)),
        "corroboration_count": pa.array(zeros),
        "contradiction_count": pa.array(zeros),
        "corroborated_by": pa.array([[]] * n, strings),
        "access_count": pa.array(zeros),
        "last_access_at": pa.nulls(n, pa.float64()),
        "created_at": pa.array(created),
        "updated_at": pa.array(np.full(n, now)),
        "decay_rate": pa.array(np.full(n, cfg.default_decay_rate)),
        "deleted": pa.array(np.zeros(n, dtype=bool)),
        "source_loop_id": pa.array([p.source_loop_id for p in payloads], pa.string()),
        "source_event_id": pa.array([p.source_event_id for p in payloads], pa.string()),
        "vector": pa.FixedSizeListArray.from_arrays(
            pa.array(vectors.astype(np.float32, copy=False).ravel()), dims
        ),
        "question_vector": pa.FixedSizeListArray.from_arrays(
            pa.array(question_vectors.astype(np.float32, copy=False).ravel()), dims
        ),
    }
    return pa.table({name: columns[name] for name in schema.names}, schema=schema)


def outcome_of(write: MemoryWrite, memory_id: str) -> dict[str, Any]:
    """The memory-outcomes record of a write, as ``stored`` (the caller refines it)."""
    return {
        "outcome_id": derived_id("memory_outcome", write.event_id),
        "event_id": write.event_id,
        "memory_id": memory_id,
        "scope": write.payload.scope,
        "status": "stored",
        "duplicate_of": None,
        "conflicts": [],
        "redacted": write.had_secrets,
    }
