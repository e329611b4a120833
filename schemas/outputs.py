"""The records loopwarden writes, as types: one per output kind, with its schema version.

Each output kind has a :class:`~typing.TypedDict` here — what its one constructor
returns and what the worker's own readers (metrics, the loop-health page, HTTP
replies, audits) index, checked by mypy — and a pydantic model that a consumer
parses it with and that the JSON Schema of its topic is exported from
(:mod:`loopwarden.schemas.contract`; ``tests/unit/test_output_contract.py`` holds each
constructor's records to both). The records are plain JSON-ready dicts: the hot path
builds and encodes them without a validation round trip.

:data:`HEADER` is the one place that writes a record's ``schema_version``: each
constructor returns a literal of its record type that begins with it
(``{**HEADER, "type": "warning", ...}``), so mypy checks every key and value it builds.
"""

from typing import Any, Final, Literal, NotRequired, TypedDict

from loopwarden.schemas.events import SCHEMA_VERSION

JsonObject = dict[str, Any]
"""A nested JSON object whose shape its own model documents (``edit``, ``produced_by`` …)."""


class RecordHeader(TypedDict):
    """What every output record begins with."""

    schema_version: int


HEADER: Final[RecordHeader] = {"schema_version": SCHEMA_VERSION}
"""The schema version every output carries (the constructors spread it first)."""


class WarningRecord(TypedDict):
    """A warning for one loop (warnings topic; model: ``LoopWarning``)."""

    schema_version: int
    type: Literal["warning"]
    warning_id: str
    kind: str
    loop_id: str
    level: str
    reason: str
    suggestions: list[str]
    next_actions: list[str]
    event_ids: list[str]
    trigger_event_id: str
    action_type: str
    iteration: int
    consecutive_count: int | None
    edit: JsonObject | None
    timeline_message: str
    occurred_at: float
    produced_by: JsonObject | None
    trace_context: JsonObject | None
    step: str | None
    repeated: JsonObject | None
    gate: JsonObject | None


class FamilyTotalsRecord(TypedDict):
    """A family's totals when a fleet finding was made."""

    loops: int
    steps: int
    failures: int
    tokens: int
    cost: float


class FleetWarningRecord(TypedDict):
    """A finding about a family of loops (fleet-warnings topic; model: ``FleetWarning``)."""

    schema_version: int
    type: Literal["fleet_warning"]
    warning_id: str
    kind: str
    root_loop_id: str
    tool: str | None
    error: str | None
    trigger_loop_id: str
    trigger_event_id: str
    step: str
    reason: str
    suggestions: list[str]
    agents: list[str]
    loop_ids: list[str]
    event_ids: list[str]
    count: int
    totals: FamilyTotalsRecord
    occurred_at: float
    produced_by: JsonObject | None


class ToolOutageRecord(TypedDict):
    """A tool failing with one error for many loops (tool-outages topic; model:
    ``ToolOutageNotice``)."""

    schema_version: int
    type: Literal["tool_outage"]
    tool: str
    error_digest: str
    error: str
    since: float
    until: float
    loops: int


class ReflectionRequestRecord(TypedDict):
    """A request for reflection analysis (reflection-requests topic; model:
    ``ReflectionRequest``)."""

    schema_version: int
    type: Literal["reflection_request"]
    request_id: str
    kind: str
    loop_id: str
    level: str
    trigger_event_id: str
    reflection: JsonObject | None
    recent_actions: list[JsonObject]
    recent_reflections: list[JsonObject]
    prompt: str | None
    memory_query: str | None
    memory_budget_bytes: int
    occurred_at: float
    produced_by: JsonObject | None
    trace_context: JsonObject | None


class LessonRecord(TypedDict):
    """A lesson the monitor asks memory to keep (memory-lessons topic; model:
    ``MemoryWrite``)."""

    schema_version: int
    type: Literal["memory_write"]
    event_id: str
    occurred_at: float
    payload: JsonObject


class RerunDecisionRecord(TypedDict):
    """The guardrails' answer to a loop completion (decisions topic; model:
    ``RerunDecision``)."""

    schema_version: int
    type: Literal["rerun_decision"]
    decision_id: str
    trigger_event_id: str
    occurred_at: float
    produced_by: JsonObject | None
    status: str
    loop_id: str
    family_id: str
    reflection_result: JsonObject
    decision_result: JsonObject
    orchestrator_persona: str | None
    timestamp: str


class ReflectionRecord(TypedDict):
    """The analyst's verdict on a reflection request (reflections topic; model:
    ``Reflection``)."""

    schema_version: int
    type: Literal["reflection"]
    reflection_id: str
    request_id: str
    kind: str
    loop_id: str
    level: str
    trigger_event_id: str
    is_spinning: bool
    reason: str
    suggestions: list[str]
    next_actions: list[str]
    analysis: str
    fallback_reason: str | None
    memory_context: str
    memory_budget_bytes: int
    timeline_message: str
    occurred_at: float


class ReflectionCachedRecord(TypedDict):
    """An analysis kept in its family's guardrails state (loop-completions topic;
    model: ``ReflectionCached``)."""

    schema_version: int
    type: Literal["reflection_cached"]
    event_id: str
    loop_id: str
    occurred_at: float
    payload: JsonObject
    published_at: NotRequired[float | None]
    trace_context: NotRequired[JsonObject | None]


class AdviceRecord(TypedDict):
    """Experience's answer to a task start (advice topic; model: ``Advice``)."""

    schema_version: int
    type: Literal["advice"]
    advice_id: str
    task_event_id: str
    loop_id: str
    strategy: str
    confidence: float
    experimental: bool
    experience_ids: list[str]
    pattern_id: str | None
    steps: list[JsonObject]
    pattern: str | None
    slots: dict[str, Any]
    avoid: list[str]
    reexplore: bool
    scores: dict[str, float]
    produced_at: float
    timeline_message: str
    read_versions: NotRequired[dict[str, int | None] | None]
    trace_context: NotRequired[JsonObject | None]


class MemoryOutcomeRecord(TypedDict):
    """What became of one memory write (memory-outcomes topic; model: ``MemoryOutcome``)."""

    schema_version: int
    type: Literal["memory_outcome"]
    outcome_id: str
    event_id: str
    scope: str
    status: str
    memory_id: NotRequired[str]
    duplicate_of: NotRequired[str | None]
    conflicts: NotRequired[list[JsonObject]]
    redacted: NotRequired[bool]
    trust: NotRequired[float]
    checks: NotRequired[str]
    reason: NotRequired[str]


class VerdictRecord(TypedDict):
    """A role's answer to a loop's action events of one input record (verdicts topic;
    model: ``Verdict``)."""

    schema_version: int
    type: Literal["verdict"]
    loop_id: str
    role: str
    answers: dict[str, int]
    roles: list[str]
    at: float
