"""Memory settings: scoring, de-duplication, conflicts, forgetting and LanceDB indexes."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class MemoryIndexSettings(BaseModel):
    """When the memory store builds and folds in its LanceDB indexes.

    Scalar indexes (id, scope, deleted, entity_refs) and the full-text index are
    created with the first rows. The vector index waits for ``vector_min_rows``
    (below that an exact scan is as fast and exact). Rows written after an index
    was built are searched exactly until ``optimize_every_rows`` of them have
    accumulated; then they are folded into every index and small files compacted.
    """

    model_config = ConfigDict(frozen=True)

    vector_min_rows: int = Field(
        50_000, ge=1, description="Rows at which the vector index is first built."
    )
    vector_index_type: Literal["IVF_SQ", "IVF_HNSW_SQ", "IVF_PQ"] = Field(
        "IVF_SQ",
        description="LanceDB vector index type. IVF_SQ: recall 0.96-0.98 and new rows "
        "folded in at ~45k/s here; IVF_HNSW_SQ: similar recall, folds ~5k rows/s; "
        "IVF_PQ: smallest, needs refine_factor for recall.",
    )
    rows_per_partition: int = Field(
        4_096, ge=256, description="IVF partition size the index aims at."
    )
    nprobes: int = Field(20, ge=1, description="IVF partitions a vector query visits.")
    refine_factor: int = Field(
        2,
        ge=1,
        description="Candidates re-ranked with exact vectors, times the limit (at 1M rows, "
        "IVF_SQ recall@10 0.938 with 1, 0.952 with 2, at the same latency).",
    )
    retrain_growth: float = Field(
        4.0, gt=1, description="Retrain the vector index once the table has grown this much."
    )
    max_vector_segments: int = Field(
        4,
        ge=1,
        description="Each fold adds a segment to the vector index that every query "
        "searches; past this many it is retrained into one (at 1M rows, five segments: "
        "ANN p50 17 ms, recall@10 0.950; one: 13 ms, 0.963).",
    )
    optimize_every_rows: int = Field(
        50_000, ge=1, description="Unindexed rows that trigger folding them into the indexes."
    )
    relation_max_fragments: int = Field(
        64,
        ge=2,
        description="The relations table is compacted once it holds this many fragments "
        "(each write batch's relations add one; without compaction every version's "
        "manifest lists them all: 3,911 relations once took 719 MB of manifests).",
    )
    upkeep_interval_s: float = Field(
        10.0,
        gt=0,
        description="How often a worker group's leader checks the indexes (builds, folds "
        "and compacts what is due, beside the writes); libraries and `memory import` keep "
        "them inline after their writes.",
    )
    keep_versions_s: float = Field(
        600.0,
        ge=0,
        description="Table versions younger than this survive compaction (a reader in "
        "another process may still be reading one; older files are deleted).",
    )


class MemorySettings(BaseModel):
    """Memory scoring, de-duplication, conflicts and forgetting (seed 000 §3, seed 002)."""

    model_config = ConfigDict(frozen=True)

    weight_r: float = Field(0.25, description="C.O.R.E. P.A.C.T. Relevance weight.")
    weight_c: float = Field(0.20, description="Connectivity weight.")
    weight_t: float = Field(0.15, description="Temporality weight.")
    weight_a: float = Field(0.15, description="Actionability weight.")
    weight_p: float = Field(0.10, description="Preference weight.")
    weight_o: float = Field(0.10, description="Origin weight.")
    weight_e: float = Field(0.05, description="Emotion weight.")
    keyword_bonus_cap: float = Field(0.3, description="Cap of the keyword bonus (§3.5).")
    keyword_content_weight: float = Field(0.1, description="Keyword bonus: content match.")
    keyword_tag_weight: float = Field(0.08, description="Keyword bonus: tag match.")
    keyword_question_weight: float = Field(0.05, description="Keyword bonus: question match.")
    keyword_presence_bonus: float = Field(0.05, description="Keyword bonus: any keyword present.")
    keyword_all_bonus: float = Field(0.03, description="Keyword bonus: all keywords present.")
    consolidation_window_days: float = Field(45.0, description="Consolidation time window.")
    consolidation_similarity: float = Field(0.9, description="Consolidation cosine threshold.")
    consolidation_group_limit: int = Field(
        5_000, ge=2, description="Newest members of one entity compared per cycle."
    )
    conflict_scan_limit: int = Field(
        20_000, ge=1, description="Memories conflict upkeep checks per cycle (it resumes)."
    )
    tag_overlap_threshold: float = Field(0.8, description="Dedup: tag Jaccard (§3.6).")
    question_similarity_threshold: float = Field(0.85, description="Dedup: questions.")
    content_similarity_threshold: float = Field(0.9, description="Dedup: content.")
    trust_source_weight: float = Field(0.5, description="Trust: source reliability (002 §4).")
    trust_recency_weight: float = Field(0.15, description="Trust: recency over 90 days.")
    trust_recency_days: float = Field(90.0, gt=0)
    trust_corroboration_weight: float = Field(0.15, description="Trust: corroboration, cap 5.")
    trust_contradiction_weight: float = Field(0.2, description="Trust: contradiction, cap 5.")
    trust_evidence_cap: int = Field(5, ge=1)
    conflict_similarity_weight: float = Field(0.45, description="Conflict (002 §5).")
    conflict_overlap_weight: float = Field(0.25)
    conflict_polarity_bonus: float = Field(0.25)
    conflict_preference_bonus: float = Field(0.15)
    conflict_threshold: float = Field(0.55)
    conflict_llm_min_similarity: float = Field(0.4)
    conflict_trust_margin: float = Field(
        0.2,
        ge=0,
        description="In an answer the newer of two contradicting memories ranks first "
        "unless the older has this much more trust.",
    )
    rrf_k: int = Field(60, ge=1, description="Reciprocal rank fusion constant (002 §2).")
    rank_by: Literal["rrf", "relevance"] = Field(
        "rrf",
        description="Order of a search's answer. rrf: the fused rank of seed 002 §2, "
        "C.O.R.E. P.A.C.T. relevance breaking ties; relevance: seed 000 §3.4 relevance "
        "plus keyword bonus first, RRF breaking ties (recall@5 on the labelled set: "
        "see benchmarks/README.md).",
    )
    short_term_beta: float = Field(1.2, description="Forgetting curve exponent, short term.")
    long_term_beta: float = Field(0.8, description="Forgetting curve exponent, long term.")
    promote_threshold: float = Field(0.7, description="Strength at which a memory is long-term.")
    demote_threshold: float = Field(0.3, description="Strength at which it drops to short-term.")
    soft_delete_strength: float = Field(0.1)
    soft_delete_age_days: float = Field(60.0)
    uri: str = Field(".loopwarden/memory", description="LanceDB directory or URI.")
    table: str = Field("memories", description="LanceDB table of memories.")
    read_consistency_s: float | None = Field(
        1.0,
        ge=0,
        description="A reader sees other processes' writes after at most this long "
        "(0: every read checks; null: never, a handle keeps the version it opened).",
    )
    embedder: Literal["use", "hashing", "e5"] = Field(
        "use",
        description="use: Universal Sentence Encoder multilingual (512 d, offline); "
        "e5: multilingual-e5-small (384 d, the e5 extra); hashing: numpy feature hashing (tests).",
    )
    hashing_dims: int = Field(256, ge=8)
    candidate_limit: int = Field(10, ge=1, description="Neighbours checked for dedup/conflicts.")
    write_checks: Literal["each", "deferred"] = Field(
        "each",
        description="each: every stream write is checked against its nearest memories "
        "(duplicates, contradictions) before it is stored, ~25 ms of vector search per "
        "write at a million memories; deferred: writes are appended as `memory import` "
        "does and the maintenance cycle's consolidation and conflict upkeep check them "
        "(bulk loads, tens of thousands of writes per second).",
    )
    default_decay_rate: float = Field(0.05, ge=0)
    batch_max_writes: int = Field(
        200, ge=1, description="Records (one write, or an array of them) applied at once."
    )
    batch_max_bytes: int = Field(
        32 * 1024 * 1024,
        ge=1,
        description="A batch is applied as soon as its records hold this many bytes "
        "(Arrow records of hundreds of writes fill it long before batch_max_writes).",
    )
    maintenance_interval_s: float = Field(
        3600.0, ge=0, description="Maintenance cycle period on the group's leader (0: off)."
    )
    batch_within_s: float = Field(
        0.5, gt=0, description="Longest wait to fill a batch of clients' own writes."
    )
    lessons_within_s: float = Field(
        2.0,
        gt=0,
        le=60,
        description="Longest wait to fill a batch of the monitor's lessons (their own "
        "topic, topics.memory_lessons): every failed action still becomes a memory, within "
        "this many seconds. Longer batches cost the worker less at light load (one "
        "LanceDB write and one encoder call for many lessons).",
    )
    index: MemoryIndexSettings = MemoryIndexSettings()
