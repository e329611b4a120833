"""Experience replay settings (seed 004): matching levels, learning, generalisation, decay."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


class ExperienceSettings(BaseModel):
    """How task experiences are learned, matched and served (seed 004 §3.3, §3.4, §5, §7).

    Every threshold of the seed is a field with the seed's value as its default.
    The experiences live beside the memories (``memory.uri``) and are embedded by
    the memory store's embedder.
    """

    model_config = ConfigDict(frozen=True)

    table: str = Field("experiences", description="LanceDB table of task experiences.")
    direct_min_success_rate: float = Field(
        0.9,
        ge=0,
        le=1,
        description="Level 1 (§3.3): an experience with the same description hash is "
        "replayed directly when its success rate is above this.",
    )
    semantic_top_k: int = Field(5, ge=1, description="Level 2: candidates searched (top_k).")
    semantic_threshold: float = Field(
        0.75, ge=0, le=1, description="Level 2: candidates below this cosine are ignored."
    )
    adaptive_threshold: float = Field(
        0.85,
        ge=0,
        le=1,
        description="Level 2: a composite similarity above this gives adaptive_replay.",
    )
    semantic_weight: float = Field(0.7, ge=0, le=1, description="Composite: semantic share.")
    app_weight: float = Field(0.15, ge=0, le=1, description="Composite: app match share.")
    intent_weight: float = Field(0.15, ge=0, le=1, description="Composite: intent match share.")
    success_ema_alpha: float = Field(
        0.3,
        gt=0,
        le=1,
        description="Weight of a replay's outcome in the success-rate EMA (§3.4; the seed "
        "names no value): one failure takes 1.0 to 0.7, two to 0.49.",
    )
    reexplore_below: float = Field(
        0.5,
        ge=0,
        le=1,
        description="An experience whose success rate falls below this is flagged for "
        "re-exploration and no longer replayed (§3.4).",
    )
    decay_after_days: float = Field(
        90.0, gt=0, description="Maintenance removes experiences unused this long (§7) ..."
    )
    decay_below: float = Field(
        0.5, ge=0, le=1, description="... whose success rate is below this (§7)."
    )
    cache_size: int = Field(
        100, ge=0, description="In-process LRU of hot experiences (§5.1 L1; 0: off)."
    )
    max_steps: int = Field(
        200,
        ge=1,
        description="Steps of a task's action history kept while it runs (the oldest are "
        "dropped past this; the experience is then marked truncated).",
    )
    task_ttl_s: float = Field(
        86_400.0,
        gt=0,
        description="An open task without an event for this long (event time) is dropped.",
    )
    pattern_min_cases: int = Field(
        2, ge=2, description="Generalisation: successful cases a pattern needs (§3.4)."
    )
    cluster_threshold: float = Field(
        0.6,
        ge=0,
        le=1,
        description="Generalisation: descriptions of one app and intent this similar "
        "(cosine) are clustered.",
    )
    maintenance_interval_s: float = Field(
        300.0, ge=0, description="How often the leader generalises and decays (0: never)."
    )
    batch_within_s: float = Field(
        0.02,
        gt=0,
        description="Task events and steps are handled in batches gathered this long.",
    )
    vector_index_min_rows: int = Field(
        20_000,
        ge=256,
        description="Experiences at which maintenance builds a vector index (IVF_HNSW_SQ); "
        "below it an exact scan is fast enough.",
    )
    wait_action_types: frozenset[str] = Field(
        frozenset({"wait", "sleep", "pause", "idle"}),
        description="Action types that are waits (dropped from a learned path).",
    )
    back_action_types: frozenset[str] = Field(
        frozenset({"back", "go_back", "navigate_back", "undo", "cancel", "close_dialog"}),
        description="Action types that back out of the previous step (both are dropped).",
    )
    navigation_action_types: frozenset[str] = Field(
        frozenset({"navigate", "open", "open_app", "open_url", "goto", "launch", "switch_tab"}),
        description="Key decision points: page changes.",
    )
    input_action_types: frozenset[str] = Field(
        frozenset({"input", "type", "search", "fill", "enter_text"}),
        description="Key decision points: search and text input.",
    )
    confirm_words: frozenset[str] = Field(
        frozenset({"confirm", "submit", "pay", "order", "buy", "checkout", "place", "send", "ok"}),
        description="Key decision points: an action whose type or target holds one of these.",
    )

    @model_validator(mode="after")
    def _weights_sum_to_one(self) -> ExperienceSettings:
        total = self.semantic_weight + self.app_weight + self.intent_weight
        if abs(total - 1.0) > 1e-6:
            raise ValueError(
                f"semantic_weight + app_weight + intent_weight must be 1 (they are {total:g})"
            )
        return self
