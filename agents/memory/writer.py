"""The memory write path: redact → embed → de-duplicate → detect conflicts → score → upsert.

- secrets are redacted before anything is stored or embedded;
- a write that is a duplicate of a live memory by 2 of 3 dimensions (tag Jaccard
  ≥ 0.8, question similarity ≥ 0.85, content similarity ≥ 0.9) corroborates it
  instead of being stored twice;
- a write that contradicts a neighbour (seed 002 §5 heuristic ≥ 0.55) is stored
  with a ``contradicts`` relation, and both sides' trust takes the contradiction;
- ids derive from the event id, and a memory remembers which events corroborated
  it, so a replayed write changes nothing.

With a model judge, the worker asks it outside its storage lock: :meth:`MemoryWriter.prepare`
and :meth:`MemoryWriter.questions` read (under the lock), the judge answers every
question (without it), :meth:`MemoryWriter.apply` writes with the answers (under the
lock again). A question the answers do not hold — a neighbour that changed in
between — falls back to the heuristic and says so.

A batch costs one id look-up, one multi-vector neighbour query per scope, one
similarity matrix for the batch itself, one upsert of new rows, one partial
update of the memories it corroborated or contradicted and one relations write:
later writes of a batch still see earlier ones, as if applied one at a time.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from loopwarden.agents.memory.embedding import Embedder, ShortTextCache
from loopwarden.agents.memory.judge import ConflictJudge, Judgement, Question
from loopwarden.agents.memory.rows import (
    content_vectors,
    new_row,
    outcome_of,
    questions_vectors,
    row_trust,
)
from loopwarden.agents.memory.scoring import (
    contradiction_confidence,
    cosine_similarity,
    is_duplicate,
    jaccard,
)
from loopwarden.schemas.memory import MemoryWrite
from loopwarden.schemas.outputs import MemoryOutcomeRecord
from loopwarden.settings import MemorySettings
from loopwarden.storage.memory_schema import rows_to_arrow
from loopwarden.storage.memory_table import MemoryTable

CANDIDATE_COLUMNS = (
    "id",
    "scope",
    "content",
    "tags",
    "potential_questions",
    "corroborated_by",
    "corroboration_count",
    "contradiction_count",
    "source_reliability",
    "trust",
    "created_at",
    "deleted",
    "vector",
    "question_vector",
)
"""What the de-duplication and conflict checks read of a neighbour."""
EVIDENCE_COLUMNS = (
    "corroboration_count",
    "corroborated_by",
    "contradiction_count",
    "trust",
    "updated_at",
)
"""What a write changes in a memory it corroborates or contradicts."""


@dataclass(frozen=True, slots=True)
class PreparedWrites:
    """Writes redacted and embedded, ready to be checked and applied."""

    writes: list[MemoryWrite]
    vectors: np.ndarray
    question_vectors: np.ndarray


@dataclass
class _Batch:
    """What a batch has decided so far: new rows, changed rows, relations."""

    new: dict[str, dict[str, Any]] = field(default_factory=dict)
    changed: dict[str, dict[str, Any]] = field(default_factory=dict)
    new_at: dict[int, str] = field(default_factory=dict)  # write index → its new row's id
    relations: list[tuple[str, str, str, float, str]] = field(default_factory=list)
    verdicts: dict[Question, Judgement | str] | None = None
    """The judge's answers asked beforehand (None: ask it inline)."""
    asked: list[Question] | None = None
    """When set, the questions for the judge are collected here instead of asked."""

    def current(self, row: dict[str, Any]) -> dict[str, Any]:
        """The batch's version of a stored row."""
        return self.new.get(row["id"]) or self.changed.get(row["id"]) or row

    def change(self, row: dict[str, Any]) -> None:
        """Keep a changed row (a new one stays new)."""
        (self.new if row["id"] in self.new else self.changed)[row["id"]] = row


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
        self.questions_embedder = ShortTextCache(embedder)  # questions repeat
        self.cfg = settings
        self.judge = judge

    def write(self, writes: Sequence[MemoryWrite], now: float) -> list[MemoryOutcomeRecord]:
        """Process ``writes`` in order (later writes see earlier ones of the batch); a
        model judge, when configured, is asked inline."""
        return self.apply(self.prepare(writes), now)

    def prepare(self, writes: Sequence[MemoryWrite]) -> PreparedWrites:
        """Redact (a no-op for what the validator redacted) and embed ``writes``."""
        redacted = [w.redacted() for w in writes]
        vectors = content_vectors(redacted, self.embedder)
        return PreparedWrites(
            redacted, vectors, questions_vectors(redacted, vectors, self.questions_embedder)
        )

    def questions(self, prepared: PreparedWrites, now: float) -> list[Question]:
        """What applying ``prepared`` would ask the model judge (the table is only read)."""
        if self.judge is None or not self.judge.enabled or not prepared.writes:
            return []
        batch = _Batch(asked=[])
        self._decide(prepared, now, batch)
        return list(dict.fromkeys(batch.asked or []))

    def apply(
        self,
        prepared: PreparedWrites,
        now: float,
        verdicts: dict[Question, Judgement | str] | None = None,
    ) -> list[MemoryOutcomeRecord]:
        """Check and store ``prepared``; ``verdicts``: the judge's answers asked beforehand
        (see :meth:`questions`), else the judge is asked inline."""
        if not prepared.writes:
            return []
        batch = _Batch(verdicts=verdicts)
        outcomes = self._decide(prepared, now, batch)
        self.table.relate_many(batch.relations)
        self.table.update_columns(list(batch.changed.values()), EVIDENCE_COLUMNS)
        if batch.new:  # their ids were looked up above: append, no second look-up
            self.table.append(rows_to_arrow(list(batch.new.values()), self.table.table.schema))
        return outcomes

    def _decide(
        self, prepared: PreparedWrites, now: float, batch: _Batch
    ) -> list[MemoryOutcomeRecord]:
        """Every write's outcome, and in ``batch`` what the table is to be changed by."""
        writes, vectors = prepared.writes, prepared.vectors
        contents = [w.payload.content for w in writes]
        questions = [list(w.payload.potential_questions) for w in writes]
        tags = [list(w.payload.tags) for w in writes]
        ids = [w.memory_id for w in writes]
        stored = self.table.existing_ids(list(dict.fromkeys(ids)))
        nearby = self._stored_neighbours(writes, vectors)
        similarity = vectors @ vectors.T  # unit vectors: cosine within the batch
        outcomes = []
        for i, write in enumerate(writes):
            if ids[i] in stored or ids[i] in batch.new:
                outcomes.append(outcome_of(write, ids[i]))
                outcomes[-1]["status"] = "already_stored"  # a replayed write
                continue
            candidates = self._candidates(
                i, write.payload.scope, vectors[i], nearby[i], similarity, batch
            )
            outcomes.append(
                self._one(
                    i,
                    write,
                    ids[i],
                    contents[i],
                    tags[i],
                    questions[i],
                    vectors[i],
                    prepared.question_vectors[i],
                    candidates,
                    batch,
                    now,
                )
            )
        return outcomes

    # -- one write ------------------------------------------------------------------------

    def _one(
        self,
        index: int,
        write: MemoryWrite,
        memory_id: str,
        content: str,
        tags: list[str],
        questions: list[str],
        vector: np.ndarray,
        question_vector: np.ndarray,
        candidates: list[tuple[dict[str, Any], float]],
        batch: _Batch,
        now: float,
    ) -> MemoryOutcomeRecord:
        cfg = self.cfg
        outcome = outcome_of(write, memory_id)
        for row, _ in candidates:
            if write.event_id in (row.get("corroborated_by") or []):
                outcome["status"], outcome["duplicate_of"] = "already_stored", row["id"]
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
                batch.change(row)
                outcome["status"], outcome["duplicate_of"] = "duplicate", row["id"]
                outcome["trust"] = row["trust"]
                return outcome
        contradictions = 0
        for row, similarity in candidates:
            kind, confidence, reason = self._relationship(
                content, row["content"], similarity, batch
            )
            if kind == "none" or confidence < cfg.conflict_threshold:
                continue
            contradictions += 1
            row = dict(row)
            row["contradiction_count"] = int(row["contradiction_count"]) + 1
            row["trust"] = self._trust(row, now)
            row["updated_at"] = now
            batch.change(row)
            batch.relations.append((memory_id, row["id"], kind, confidence, reason))
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
        new = new_row(write, memory_id, vector, question_vector, cfg, now)
        new["contradiction_count"] = contradictions
        new["trust"] = self._trust(new, now)
        batch.new[memory_id] = new
        batch.new_at[index] = memory_id
        outcome["trust"] = new["trust"]
        return outcome

    def _relationship(
        self, content: str, existing: str, similarity: float, batch: _Batch
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
        question = (existing, content)
        if batch.asked is not None:
            batch.asked.append(question)
            return label, confidence, reason
        if batch.verdicts is None:
            judged: Judgement | str = self.judge.answer(question)
        else:
            judged = batch.verdicts.get(question, "the neighbour changed while it was asked")
        if isinstance(judged, str):
            return label, confidence, f"{reason} (judge failed: {judged})"
        return judged.label, judged.confidence, f"model: {judged.reason}"

    def _stored_neighbours(
        self, writes: Sequence[MemoryWrite], vectors: np.ndarray
    ) -> list[list[tuple[dict[str, Any], float]]]:
        """Each write's nearest stored memories of its scope: one id-only query per
        write, then one read of every candidate's columns by row id."""
        by_scope: dict[str, list[int]] = defaultdict(list)
        for i, write in enumerate(writes):
            by_scope[write.payload.scope].append(i)
        hits: list[list[tuple[dict[str, Any], float]]] = [[] for _ in writes]
        for scope, members in by_scope.items():
            found = self.table.neighbours_many(
                vectors[members], scope, self.cfg.candidate_limit, ("id",), row_ids=True
            )
            for i, rows in zip(members, found, strict=True):
                hits[i] = rows
        row_ids = {row["id"]: row["_rowid"] for rows in hits for row, _ in rows}
        rows_by_id = self.table.take(row_ids, CANDIDATE_COLUMNS)
        return [
            [(rows_by_id[row["id"]], sim) for row, sim in rows if row["id"] in rows_by_id]
            for rows in hits
        ]

    def _candidates(
        self,
        index: int,
        scope: str,
        vector: np.ndarray,
        nearby: list[tuple[dict[str, Any], float]],
        similarity: np.ndarray,
        batch: _Batch,
    ) -> list[tuple[dict[str, Any], float]]:
        """The write's stored neighbours as this batch left them, plus the batch's own
        new and changed rows of the scope, nearest first."""
        found = {row["id"]: (batch.current(row), sim) for row, sim in nearby}
        for j, memory_id in batch.new_at.items():
            row = batch.new[memory_id]
            if row["scope"] == scope and memory_id not in found:
                found[memory_id] = (row, float(similarity[index, j]))
        for memory_id, row in batch.changed.items():  # stored rows an earlier write changed
            if row["scope"] == scope and not row["deleted"] and memory_id not in found:
                found[memory_id] = (row, cosine_similarity(vector, row["vector"]))
        ranked = sorted(found.values(), key=lambda pair: -pair[1])
        return ranked[: self.cfg.candidate_limit]

    def _trust(self, row: dict[str, Any], now: float) -> float:
        return row_trust(row, now, self.cfg)
