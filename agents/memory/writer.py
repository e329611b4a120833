"""The memory write path: redact → embed → de-duplicate → detect conflicts → score → upsert.

- secrets are redacted before anything is stored or embedded;
- a write that is a duplicate of a live memory by 2 of 3 dimensions (tag Jaccard
  ≥ 0.8, question similarity ≥ 0.85, content similarity ≥ 0.9) corroborates it
  instead of being stored twice;
- a write that contradicts a neighbour (seed 002 §5 heuristic ≥ 0.55) is stored
  with a ``contradicts`` relation, and both sides' trust takes the contradiction;
- ids derive from the event id, and a memory remembers which events corroborated
  it, so a replayed write changes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from loopwarden.agents.memory.embedding import Embedder
from loopwarden.agents.memory.judge import ConflictJudge
from loopwarden.agents.memory.scoring import (
    DIMENSIONS,
    contradiction_confidence,
    cosine_similarity,
    is_duplicate,
    jaccard,
    relevance,
    trust_score,
)
from loopwarden.schemas.ids import derived_id
from loopwarden.schemas.memory import MemoryWrite
from loopwarden.schemas.redaction import redact_text
from loopwarden.settings import MemorySettings
from loopwarden.storage.memory_table import MemoryTable

DAY = 86_400.0


def _age_days(now: float, then: float | None) -> float:
    return max((now - (then or now)) / DAY, 0.0)


class MemoryWriter:
    """Applies memory writes to a :class:`MemoryTable`; returns one outcome per write."""

    def __init__(
        self,
        table: MemoryTable,
        embedder: Embedder,
        settings: MemorySettings,
        judge: ConflictJudge | None = None,
    ) -> None:
        if embedder.dims != table.dims:
            raise ValueError(f"embedder gives {embedder.dims}-d vectors, table holds {table.dims}")
        self.table = table
        self.embedder = embedder
        self.cfg = settings
        self.judge = judge

    def write(self, writes: Sequence[MemoryWrite], now: float) -> list[dict[str, Any]]:
        """Process ``writes`` in order (later writes see earlier ones of the batch)."""
        if not writes:
            return []
        contents = [redact_text(w.payload.content) for w in writes]
        questions = [[redact_text(q) for q in w.payload.potential_questions] for w in writes]
        tags = [[redact_text(t) for t in w.payload.tags] for w in writes]
        vectors = self._vectors(writes, contents)
        question_vectors = self._question_vectors(questions, vectors)
        dirty: dict[str, dict[str, Any]] = {}  # rows to upsert, by id
        outcomes = []
        for i, write in enumerate(writes):
            outcomes.append(
                self._one(
                    write,
                    contents[i],
                    tags[i],
                    questions[i],
                    vectors[i],
                    question_vectors[i],
                    dirty,
                    now,
                )
            )
        self.table.upsert(list(dirty.values()))
        return outcomes

    # -- one write ------------------------------------------------------------------------

    def _one(
        self,
        write: MemoryWrite,
        content: str,
        tags: list[str],
        questions: list[str],
        vector: np.ndarray,
        question_vector: np.ndarray,
        dirty: dict[str, dict[str, Any]],
        now: float,
    ) -> dict[str, Any]:
        cfg, p = self.cfg, write.payload
        memory_id = p.memory_id or derived_id("memory", p.scope, write.event_id)
        outcome: dict[str, Any] = {
            "outcome_id": derived_id("memory_outcome", write.event_id),
            "event_id": write.event_id,
            "memory_id": memory_id,
            "scope": p.scope,
            "status": "stored",
            "duplicate_of": None,
            "conflicts": [],
            "redacted": content != p.content
            or tags != p.tags
            or questions != p.potential_questions,
        }
        known = dirty.get(memory_id) or next(iter(self.table.get([memory_id])), None)
        if known is not None:
            outcome["status"] = "already_stored"  # a replayed write
            return outcome
        candidates = self._candidates(vector, p.scope, dirty)
        for row, _ in candidates:
            if write.event_id in (row.get("corroborated_by") or []):
                outcome.update(status="already_stored", duplicate_of=row["id"])
                return outcome
        for row, similarity in candidates:
            question_similarity = cosine_similarity(question_vector, row["question_vector"])
            if is_duplicate(
                jaccard(tags, row["tags"] or []),
                question_similarity,
                similarity,
                cfg,
                has_tags=bool(tags and row["tags"]),
                has_questions=bool(questions and row["potential_questions"]),
            ):
                row = dict(row)
                row["corroboration_count"] = int(row["corroboration_count"]) + 1
                row["corroborated_by"] = [*(row["corroborated_by"] or []), write.event_id]
                row["trust"] = self._trust(row, now)
                row["updated_at"] = now
                dirty[row["id"]] = row
                outcome.update(status="duplicate", duplicate_of=row["id"], trust=row["trust"])
                return outcome
        contradictions = 0
        for row, similarity in candidates:
            kind, confidence, reason = self._relationship(content, row["content"], similarity)
            if kind == "none" or confidence < cfg.conflict_threshold:
                continue
            contradictions += 1
            row = dict(row)
            row["contradiction_count"] = int(row["contradiction_count"]) + 1
            row["trust"] = self._trust(row, now)
            row["updated_at"] = now
            dirty[row["id"]] = row
            self.table.relate(memory_id, row["id"], kind, confidence, reason)
            outcome["conflicts"].append(
                {
                    "memory_id": row["id"],
                    "confidence": confidence,
                    "relation": kind,
                    "reason": reason,
                }
            )
        if outcome["conflicts"]:
            outcome["status"] = "stored_with_conflicts"
        scores = p.scores.model_dump()
        new = {
            "id": memory_id,
            "scope": p.scope,
            "content": content,
            "tags": tags,
            "potential_questions": questions,
            "entity_refs": [redact_text(e).lower() for e in p.entity_refs],
            "memory_type": p.memory_type,
            "layer": p.layer,
            **{d: float(scores[d]) for d in DIMENSIONS},
            "importance": p.importance if p.importance is not None else relevance(scores),
            "source_reliability": p.source_reliability,
            "corroboration_count": 0,
            "contradiction_count": contradictions,
            "corroborated_by": [],
            "access_count": 0,
            "last_access_at": None,
            "created_at": write.occurred_at,
            "updated_at": now,
            "decay_rate": cfg.default_decay_rate,
            "deleted": False,
            "source_loop_id": p.source_loop_id,
            "source_event_id": p.source_event_id,
            "vector": vector.astype(np.float32).tolist(),
            "question_vector": question_vector.astype(np.float32).tolist(),
        }
        new["trust"] = self._trust(new, now)
        dirty[memory_id] = new
        outcome["trust"] = new["trust"]
        return outcome

    def _relationship(
        self, content: str, existing: str, similarity: float
    ) -> tuple[str, float, str]:
        """The model judge above similarity 0.4 when configured, else (or on failure) the
        heuristic of seed 002 §5."""
        confidence = contradiction_confidence(content, existing, similarity, self.cfg)
        label = "contradicts" if confidence >= self.cfg.conflict_threshold else "none"
        reason = "heuristic: semantic overlap and polarity/preference markers"
        if (
            self.judge is None
            or not self.judge.enabled
            or (similarity < self.cfg.conflict_llm_min_similarity)
        ):
            return label, confidence, reason
        judged = self.judge.judge(existing, content)
        if judged is None:
            return label, confidence, f"{reason} (judge failed: {self.judge.last_error})"
        return judged.label, judged.confidence, f"model: {judged.reason}"

    def _vectors(self, writes: Sequence[MemoryWrite], contents: list[str]) -> np.ndarray:
        """Content vectors: the write's own (normalised) or the embedder's, only for
        the writes that carry none."""
        vectors = np.zeros((len(writes), self.embedder.dims), dtype=np.float32)
        to_embed = [i for i, w in enumerate(writes) if w.payload.embedding is None]
        if to_embed:
            vectors[to_embed] = self.embedder.embed([contents[i] for i in to_embed])
        for i, write in enumerate(writes):
            supplied = write.payload.embedding
            if supplied is not None:
                if len(supplied) != self.embedder.dims:
                    raise ValueError(
                        f"event {write.event_id}: embedding has {len(supplied)} dimensions, "
                        f"the memory table {self.embedder.dims}"
                    )
                v = np.asarray(supplied, dtype=np.float32)
                norm = np.linalg.norm(v)
                vectors[i] = v / norm if norm else v
        return vectors

    def _question_vectors(self, questions: list[list[str]], vectors: np.ndarray) -> np.ndarray:
        """The questions' vector, or the content's for a write without questions (it
        casts no question vote then: see ``is_duplicate``)."""
        result = vectors.copy()
        asked = [i for i, q in enumerate(questions) if q]
        if asked:
            result[asked] = self.embedder.embed([" ".join(questions[i]) for i in asked])
        return result

    def _candidates(
        self, vector: np.ndarray, scope: str, dirty: dict[str, dict[str, Any]]
    ) -> list[tuple[dict[str, Any], float]]:
        found = {
            row["id"]: (dirty.get(row["id"], row), sim)
            for row, sim in self.table.neighbours(vector, scope, self.cfg.candidate_limit)
        }
        for row in dirty.values():  # rows of this batch, not yet in the table
            if row["scope"] == scope and not row["deleted"] and row["id"] not in found:
                found[row["id"]] = (row, cosine_similarity(vector, row["vector"]))
        ranked = sorted(found.values(), key=lambda pair: -pair[1])
        return ranked[: self.cfg.candidate_limit]

    def _trust(self, row: dict[str, Any], now: float) -> float:
        return trust_score(
            row["source_reliability"],
            int(row["corroboration_count"]),
            int(row["contradiction_count"]),
            _age_days(now, row.get("created_at")),
            self.cfg,
        )
