"""The contract of every topic loopwarden reads or writes, as JSON Schema.

:data:`TOPIC_RECORDS` names, per topic role (``settings.topics.<role>``), the model of
its records: what producers must send on the topics the worker reads, what consumers
get on the topics it writes. :func:`topic_schemas` exports their JSON Schemas (draft
2020-12, as pydantic writes them): what ``loopwarden schema`` prints or writes, what
``docs/schemas/`` ships, and what a client in another language generates its types from.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, TypeAdapter

from loopwarden.schemas.completions import GuardrailOverride, LoopCompletion, ReflectionCached
from loopwarden.schemas.decisions import RerunDecision
from loopwarden.schemas.events import ActionEvent
from loopwarden.schemas.fleet import FleetWarning, ToolOutageNotice
from loopwarden.schemas.memory import MemoryWrite
from loopwarden.schemas.memory_outcomes import MaintenanceReport, MemoryOutcome
from loopwarden.schemas.reflection import Reflection, ReflectionRequest
from loopwarden.schemas.tasks import Advice, TaskEnd, TaskStart
from loopwarden.schemas.verdicts import Verdict
from loopwarden.schemas.warnings import LoopWarning

ActionsRecord = ActionEvent | TaskStart | TaskEnd
"""An action (``type`` may be left out: ``action`` is its default) or a task's start or end."""
CompletionsRecord = Annotated[
    LoopCompletion | GuardrailOverride | ReflectionCached, Field(discriminator="type")
]
MemoryOutcomesRecord = Annotated[MemoryOutcome | MaintenanceReport, Field(discriminator="type")]

TOPIC_RECORDS: dict[str, tuple[Any, str]] = {
    "actions": (ActionsRecord, "in"),
    "warnings": (LoopWarning, "out"),
    "fleet_warnings": (FleetWarning, "out"),
    "tool_outages": (ToolOutageNotice, "out"),
    "reflection_requests": (ReflectionRequest, "out"),
    "reflections": (Reflection, "out"),
    "loop_completions": (CompletionsRecord, "in"),
    "decisions": (RerunDecision, "out"),
    "memory_writes": (MemoryWrite, "in"),
    "memory_lessons": (MemoryWrite, "out"),
    "memory_outcomes": (MemoryOutcomesRecord, "out"),
    "advice": (Advice, "out"),
    "verdicts": (Verdict, "out"),
}
"""Topic role → (the model of its records, ``in``: the worker reads it / ``out``: writes it).
A topic the worker reads may be written by it too (loop completions: the analyst's
cached reflections)."""

SCHEMA_ID = "urn:loopwarden:topic:{role}"


def topic_schema(role: str) -> dict[str, Any]:
    """The JSON Schema of the records of topic ``role`` (a key of :data:`TOPIC_RECORDS`)."""
    model, direction = TOPIC_RECORDS[role]
    schema: dict[str, Any] = TypeAdapter(model).json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID.format(role=role),
        "x-loopwarden-topic": role,
        "x-loopwarden-direction": direction,
        **schema,
    }


def topic_schemas() -> dict[str, dict[str, Any]]:
    """Every topic's JSON Schema, by topic role."""
    return {role: topic_schema(role) for role in TOPIC_RECORDS}
