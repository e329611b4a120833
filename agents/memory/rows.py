"""A new memory's stored row and outcome, one at a time or as Arrow columns.

The write path builds rows one by one (each write may change the next one's
checks); bulk paths (``memory import``, stream writes with
``memory.write_checks=deferred``) build a whole batch as Arrow columns with
numpy — the same values (tested), without a Python dict per row — from validated
writes or straight from an Arrow record's checked columns. Writes reach
here redacted (:meth:`MemoryWrite.redacted`, a no-op for a write the validator
already redacted); the texts stored are the write's.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from loopwarden.agents.memory.embedding import Embedder
from loopwarden.agents.memory.scoring import (
    DIMENSIONS,
    relevance,
    relevance_batch,
    trust_score,
    trust_scores,
)
from loopwarden.schemas.memory import MemoryWrite
from loopwarden.schemas.memory_columns import MemoryColumns
from loopwarden.schemas.memory_outcomes import stored_outcome
from loopwarden.schemas.outputs import MemoryOutcomeRecord
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
        supplied_vectors = [np.asarray(writes[i].payload.embedding) for i in supplied]
        vectors[supplied] = unit_rows(np.stack(supplied_vectors))
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
    strings = pa.list_(pa.string())
    fields: dict[str, Any] = {
        "id": pa.array(ids, pa.string()),
        "scope": pa.array([p.scope for p in payloads], pa.string()),
        "content": pa.array([p.content for p in payloads], pa.string()),
        "tags": pa.array([p.tags for p in payloads], strings),
        "potential_questions": pa.array([p.potential_questions for p in payloads], strings),
        "entity_refs": pa.array([[e.lower() for e in p.entity_refs] for p in payloads], strings),
        "memory_type": pa.array([p.memory_type for p in payloads], pa.string()),
        "layer": pa.array([p.layer for p in payloads], pa.string()),
        "source_loop_id": pa.array([p.source_loop_id for p in payloads], pa.string()),
        "source_event_id": pa.array([p.source_event_id for p in payloads], pa.string()),
    }
    scores = np.array([score_of(p.scores) for p in payloads], dtype=np.float64)
    importance = [np.nan if p.importance is None else p.importance for p in payloads]
    return _stored_rows(
        fields,
        scores.reshape(n, len(DIMENSIONS)),
        np.array(importance, dtype=np.float64),
        np.array([p.source_reliability for p in payloads], dtype=np.float64),
        np.array([w.occurred_at for w in writes], dtype=np.float64),
        (vectors, question_vectors),
        cfg,
        now,
        schema,
    )


def column_vectors(columns: MemoryColumns, embedder: Embedder) -> tuple[np.ndarray, np.ndarray]:
    """:func:`content_vectors` of a column batch, and the rows whose vector has another
    size than the table's (not stored: rejected)."""
    dims = embedder.dims
    given = columns.table.column("embedding").combine_chunks()
    has = np.asarray(given.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    sizes = pc.fill_null(pc.list_value_length(given), 0).to_numpy(zero_copy_only=False)
    wrong = has & (sizes != dims)
    right = has & ~wrong
    if right.all():  # the bulk case: every row brought its vector, one pass, no copies
        return unit_rows(given.flatten().to_numpy(zero_copy_only=False).reshape(-1, dims)), wrong
    vectors = np.zeros((len(columns), dims), dtype=np.float32)
    if right.any():
        kept = given.filter(pa.array(right))
        vectors[right] = unit_rows(kept.flatten().to_numpy(zero_copy_only=False).reshape(-1, dims))
    missing = np.flatnonzero(~has)
    if len(missing):
        contents = columns.table.column("content").take(pa.array(missing)).to_pylist()
        vectors[missing] = embedder.embed(contents)
    return vectors, wrong


UNIT_TOLERANCE = 1e-6
"""A supplied vector whose length is 1 within this is stored as sent (most embedding
APIs return unit vectors: no copy of a batch's vectors, and no last-bit changes)."""


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), as float32."""
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix, dtype=np.float64))
    unit = np.abs(norms - 1.0) <= UNIT_TOLERANCE
    if unit.all():
        return matrix.astype(np.float32, copy=False)
    norms = np.where(unit | (norms == 0), 1.0, norms)
    return np.divide(matrix, norms[:, None], dtype=np.float32)


def column_question_vectors(
    columns: MemoryColumns, vectors: np.ndarray, embedder: Embedder
) -> np.ndarray:
    """:func:`questions_vectors` of a column batch (``vectors`` itself when no row
    asks questions: never changed in place)."""
    questions = columns.table.column("potential_questions").combine_chunks()
    lengths = pc.list_value_length(questions).to_numpy(zero_copy_only=False)
    asked = np.flatnonzero(lengths > 0)
    if not len(asked):
        return vectors
    result = vectors.copy()
    texts = [" ".join(q) for q in questions.take(pa.array(asked)).to_pylist()]
    result[asked] = embedder.embed(texts)
    return result


def _lowered(lists: pa.ChunkedArray) -> pa.Array:
    array = lists.combine_chunks()
    values = [text.lower() for text in array.values.to_pylist()]  # Python's lower(), as above
    return pa.ListArray.from_arrays(array.offsets, pa.array(values, pa.string()))


def column_rows_table(
    columns: MemoryColumns,
    ids: Sequence[str],
    vectors: np.ndarray,
    question_vectors: np.ndarray,
    cfg: MemorySettings,
    now: float,
    schema: pa.Schema,
) -> pa.Table:
    """:func:`new_rows_table` of a checked column batch (tested equal, row for row)."""
    t = columns.table
    scores = t.column("scores").combine_chunks()
    importance = pc.fill_null(t.column("importance"), np.nan)
    fields: dict[str, Any] = {
        "id": pa.array(ids, pa.string()),
        **{
            name: t.column(name)
            for name in (
                "scope",
                "content",
                "tags",
                "potential_questions",
                "memory_type",
                "layer",
                "source_loop_id",
                "source_event_id",
            )
        },
        "entity_refs": _lowered(t.column("entity_refs")),
    }
    matrix = np.column_stack(
        [scores.field(d).to_numpy(zero_copy_only=False) for d in DIMENSIONS]
    ).astype(np.float64)
    return _stored_rows(
        fields,
        matrix,
        importance.to_numpy(),
        t.column("source_reliability").to_numpy(),
        t.column("occurred_at").to_numpy(),
        (vectors, question_vectors),
        cfg,
        now,
        schema,
    )


def _stored_rows(
    fields: dict[str, Any],
    scores: np.ndarray,
    given_importance: np.ndarray,
    reliability: np.ndarray,
    created: np.ndarray,
    vectors: tuple[np.ndarray, np.ndarray],
    cfg: MemorySettings,
    now: float,
    schema: pa.Schema,
) -> pa.Table:
    """The stored columns of new memories: ``fields`` as given, scores, trust and the
    counters computed (NaN importance: the weighted scores)."""
    n = len(created)
    importance = np.where(
        np.isnan(given_importance), relevance_batch(scores, cfg=cfg), given_importance
    )
    zeros = np.zeros(n, dtype=np.int32)
    dims = vectors[0].shape[1]
    columns: dict[str, Any] = {
        **fields,
        **{d: pa.array(scores[:, i]) for i, d in enumerate(DIMENSIONS)},
        "importance": pa.array(importance),
        "source_reliability": pa.array(reliability),
        "trust": pa.array(trust_scores(reliability, (now - created) / DAY, cfg)),
        "corroboration_count": pa.array(zeros),
        "contradiction_count": pa.array(zeros),
        "corroborated_by": pa.array([[]] * n, pa.list_(pa.string())),
        "access_count": pa.array(zeros),
        "last_access_at": pa.nulls(n, pa.float64()),
        "created_at": pa.array(created),
        "updated_at": pa.array(np.full(n, now)),
        "decay_rate": pa.array(np.full(n, cfg.default_decay_rate)),
        "deleted": pa.array(np.zeros(n, dtype=bool)),
        "vector": pa.FixedSizeListArray.from_arrays(
            pa.array(vectors[0].astype(np.float32, copy=False).ravel()), dims
        ),
        "question_vector": pa.FixedSizeListArray.from_arrays(
            pa.array(vectors[1].astype(np.float32, copy=False).ravel()), dims
        ),
        "card": pa.nulls(n, pa.binary()),  # written with the rows (MemoryTable.append)
    }
    return pa.table({name: columns[name] for name in schema.names}, schema=schema)


def outcome_of(write: MemoryWrite, memory_id: str) -> MemoryOutcomeRecord:
    """The memory-outcomes record of a write, as ``stored`` (the caller refines it)."""
    return stored_outcome(write.event_id, write.payload.scope, memory_id, write.had_secrets)
