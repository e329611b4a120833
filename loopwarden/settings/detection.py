"""Detection settings: spin detectors, profiles, the ladder, reflection triggers (seed 000)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Language = Literal["en", "zh"]
ToolRule = Literal["exempt", "poll", "masked", "numbers"]


class DetectionSettings(BaseModel):
    """Spin detection and reflection triggers (seed 000, sections 1-2)."""

    model_config = ConfigDict(frozen=True)

    spin_threshold: int = Field(
        3, ge=1, description="Layer 1: this many consecutive actions of one type is a spin."
    )
    max_spin_threshold: int = Field(
        50, ge=1, description="Largest per-loop spin threshold an event may ask for."
    )
    logic_spin_threshold: int = Field(
        3, ge=1, description="Layer 2: actions handed to the semantic spin check."
    )
    semantic_check_every: int | None = Field(
        None,
        ge=1,
        description="Layer 2 runs when Layer 1 fires and again every this many actions while "
        "the streak lasts (default: the loop's spin threshold).",
    )
    action_type_key: Literal["type", "type_and_name"] = Field(
        "type",
        description="Layer 1 compares action types (the seed) or (type, name) pairs (Memfit).",
    )
    monologue_count: int = Field(
        5, ge=2, description="This many message turns in a row without a tool call."
    )
    empty_response_count: int = Field(
        3, ge=2, description="This many empty message turns in a row."
    )
    repeat_result_count: int = Field(
        4, ge=2, description="Same call returning the same result this many times in a row."
    )
    repeat_failure_count: int = Field(
        3, ge=2, description="Same call failing this many times in a row."
    )
    failure_streak_count: int = Field(
        5, ge=2, description="This many failed actions in a row, of any kind."
    )
    cycle_max_period: int = Field(5, ge=2, description="Longest cycle looked for (calls).")
    cycle_repeats: int = Field(3, ge=2, description="Repetitions of a cycle that make a spin.")
    no_progress_calls: int = Field(
        8, ge=2, description="This many calls in a row that each repeat one of the window's."
    )
    no_progress_window: int = Field(
        20, ge=2, description="Calls (with results) remembered for no-progress."
    )
    outcome_repeats: int = Field(
        3, ge=2, description="repeated_outcome: the same call with the same result this many times."
    )
    outcome_unknown_repeats: int = Field(
        3,
        ge=2,
        description="repeated_outcome: the very same call, working with no result published, "
        "this many times.",
    )
    outcome_window: int = Field(
        16, ge=2, description="repeated_outcome: among this many of the agent's last calls."
    )
    retry_similarity: float = Field(
        0.8,
        ge=0.0,
        le=1.0,
        description="repeated_outcome: a failed call at least this alike an earlier one "
        "(its words), with the same error, is the same call retried (1: identical only).",
    )
    result_similarity: float = Field(
        0.9,
        ge=0.0,
        le=1.0,
        description="Results whose normalised texts are at least this alike are the same.",
    )
    message_repeats: int = Field(
        3, ge=2, description="repeated_message: the same message this many times."
    )
    message_window: int = Field(
        4, ge=2, description="repeated_message: among this many of the speaker's last turns."
    )
    message_similarity: float = Field(
        0.6, ge=0.0, le=1.0, description="repeated_message: first lines at least this alike."
    )
    message_body_similarity: float = Field(
        0.5, ge=0.0, le=1.0, description="repeated_message: the rest at least this alike."
    )
    message_min_words: int = Field(
        5, ge=1, description="repeated_message: shorter turns are routine, not compared."
    )
    restate_repeats: int = Field(
        3, ge=2, description="restated_message: the same meaning this many times in a row."
    )
    restate_window: int = Field(
        3,
        ge=2,
        description="restated_message: among this many of the speaker's turns since its "
        "last tool call.",
    )
    restate_similarity: float = Field(
        0.55,
        ge=0.0,
        le=1.0,
        description="restated_message: turns whose meanings (sentence-encoder cosine) are "
        "at least this alike say the same thing.",
    )
    rejection_repeats: int = Field(
        2,
        ge=2,
        description="repeated_rejection: the same attempt (alike words or the same target) "
        "refused for the same reason (events with rejected=true) this many times among the "
        "agent's last outcome_window calls.",
    )
    rejection_streak: int = Field(
        3,
        ge=2,
        description="repeated_rejection: one tool refusing any calls for the same reason "
        "this many times among the agent's last rejection_window calls.",
    )
    rejection_window: int = Field(
        4, ge=2, description="repeated_rejection: the calls rejection_streak counts among."
    )
    poll_repeats: int = Field(
        8,
        ge=2,
        description="repeated_outcome: a polling call (one that waits: sleep, watch, or a tool "
        "set to poll) repeats only after this many unchanged results, and never before twice "
        "the longest wait it saw end in a change.",
    )
    tools: dict[str, ToolRule] = Field(
        default_factory=dict,
        description="Per tool (a glob matched against action_type and action_name, such as "
        "'kubectl get *'): exempt (never a repeat), poll (a polling call), masked (numbers "
        "in its results do not count) or numbers (numbers that move are progress, the "
        "default).",
    )
    counterpart_agents: frozenset[str] = Field(
        frozenset({"user", "human", "person", "customer"}),
        description="Message turns whose agent is one of these are the counterpart's turns "
        "(what the person said), as if published with turn=counterpart.",
    )
    volatile_param_keys: str = Field(
        r"(?i)^(request_id|idempotency_key|trace_id|span_id|nonce|ts|timestamp)$",
        description="Parameters whose key matches are ignored when comparing calls (request "
        "ids only: an argument that names a record, such as payment_id, is part of the call).",
    )
    volatile_value_pattern: str = Field(
        r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
        r"|\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?"
        r"|\b[0-9a-f]{16,}\b",
        description="Parts of parameter values masked when comparing calls (ids, times).",
    )
    profile: Literal[
        "gated", "loops", "seed", "patterns", "openhands", "gemini-cli", "roo-code"
    ] = Field(
        "gated",
        description="gated (the default): every repetition rule proposes and the calibrated "
        "gate decides, laddered (measured leave-one-kind-out: docs/detection.md); loops: "
        "repeated outcomes, messages and restated messages, laddered, no gate; seed: seed "
        "000 exactly; patterns: literal no-progress patterns, laddered; openhands, "
        "gemini-cli, roo-code: those tools' own rules, for comparison.",
    )
    gate: bool | None = Field(
        None, description="Override the profile's gate (on in gated): rules propose, it decides."
    )
    gate_threshold: float | None = Field(
        None,
        ge=0.0,
        le=1.0,
        description="The gate's score (a calibrated probability that the step is in a loop) "
        "a finding needs to be shown; default: the model's own, chosen leave-one-kind-out.",
    )
    gate_model: str | None = Field(
        None, description="Path of a gate model (JSON); default: the shipped one."
    )
    detectors: tuple[str, ...] | None = Field(
        None, description="Override the profile's detectors (names, in order; agents/spin/)."
    )
    ladder: bool | None = Field(
        None, description="Override the profile's warn-then-stop ladder (on in patterns)."
    )
    ladder_escalate_at: int = Field(3, ge=2, description="Ladder: the escalated warning.")
    ladder_final_at: int = Field(5, ge=3, description="Ladder: the final warning.")
    ladder_stop_at: int = Field(7, ge=4, description="Ladder: the stop recommendation.")
    ladder_quiet_actions: int = Field(
        3, ge=1, description="Ladder: actions without a finding that end an episode."
    )
    action_window: int = Field(
        10, ge=1, description="Actions kept per loop (the seed reads the last 10)."
    )
    iteration_threshold: int = Field(
        5, ge=0, description="After this many iterations a spin escalates to Standard."
    )
    edit_region_lines: int = Field(
        5, ge=0, description="Layer 3: start and end lines within this distance are one region."
    )
    edit_small_max_lines: int = Field(
        3, ge=1, description="Layer 3: an edit spanning at most this many lines is small."
    )
    edit_spin_count: int = Field(
        3, ge=1, description="Layer 3: the same-region small-edit count that is a spin."
    )
    edit_lookback_actions: int = Field(
        10, ge=1, description="Layer 3: the previous edit must be among this many actions."
    )
    reflection_enabled: bool = Field(True, description="Off: every decision is level None.")
    simple_action_types: frozenset[str] = Field(
        frozenset(), description="Action types treated as simple (Minimal reflection)."
    )
    reflection_cache_size: int = Field(3, ge=0, description="Reflections cached per loop.")
    memory_budget_standard: int = Field(2 * 1024, ge=0, description="Bytes of memory context.")
    memory_budget_deep: int = Field(5 * 1024, ge=0, description="Bytes of memory context.")
    memory_budget_critical: int = Field(10 * 1024, ge=0, description="Bytes of memory context.")
    state_params_max_bytes: int = Field(
        1024, ge=0, description="Action parameters larger than this are not kept in loop state."
    )
    language: Language = Field("en", description="Language of warning texts: en or zh (seed).")
    learn_from_failures: bool = Field(
        True, description="Failed and loop-ending actions become memory writes (seed 000 §3.7)."
    )
    learning_scope: str = Field("default", description="Memory scope of those writes.")
    task_completion_budget: int = Field(
        4096, ge=0, description="Bytes of memories searched when a loop completes (§3.7.2)."
    )

    @model_validator(mode="after")
    def _ladder_in_order(self) -> DetectionSettings:
        if not self.ladder_escalate_at < self.ladder_final_at < self.ladder_stop_at:
            raise ValueError("ladder steps must rise: escalate_at < final_at < stop_at")
        return self

    @model_validator(mode="after")
    def _window_holds_threshold(self) -> DetectionSettings:
        if self.spin_threshold > self.max_spin_threshold:
            raise ValueError("spin_threshold must not exceed max_spin_threshold")
        return self
