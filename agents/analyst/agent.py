"""The Faust side of the analyst: reflection requests → analyses.

Consumes the reflection-requests topic (keyed by loop id), analyses each request
(``analyst.concurrency`` at a time: a model call must not hold up the others),
and publishes the analysis on the reflections topic, a ``logic_spin`` warning
when the semantic check finds a spin, and a ``reflection_cached`` event on the
loop-completions topic so the loop family's guardrail state keeps the loop's
last three reflections (stage 5) for the guardrails status.
"""

from __future__ import annotations

import logging
from typing import Any

from loopwarden.agents import findings
from loopwarden.agents.analyst.analyst import ReflectionAnalyst
from loopwarden.agents.memory.service import LanceMemoryContext
from loopwarden.agents.memory.shared import shared_memory
from loopwarden.agents.provenance import analyst_stamp
from loopwarden.schemas.outputs import (
    HEADER,
    ReflectionCachedRecord,
    ReflectionRecord,
    WarningRecord,
)
from loopwarden.schemas.records import decode_record
from loopwarden.schemas.reflection import validate_reflection_request
from loopwarden.schemas.trace_context import carried
from loopwarden.schemas.warnings import WarningKind
from loopwarden.streams.runtime.app import LoopwardenApp
from loopwarden.streams.runtime.capability import Capability
from loopwarden.streams.runtime.capability_runner import run_capability
from loopwarden.streams.runtime.records import Record
from loopwarden.streams.runtime.resources import WorkerResources
from loopwarden.streams.runtime.telemetry.spans import process_span

log = logging.getLogger(__name__)


def logic_spin_warning(
    analysis: ReflectionRecord,
    event_ids: list[str],
    stamp: dict[str, Any] | None = None,
    iteration: int = 0,
) -> WarningRecord:
    """The warning an agent receives when the analyst confirms a logic spin, at the
    ``iteration`` of the action that triggered the check."""
    return findings.warning(
        kind=WarningKind.LOGIC_SPIN.value,
        loop_id=analysis["loop_id"],
        trigger_event_id=analysis["trigger_event_id"],
        level=analysis["level"],
        reason=analysis["reason"],
        suggestions=analysis["suggestions"],
        next_actions=analysis["next_actions"],
        event_ids=event_ids,
        action_type="semantic_spin_check",
        iteration=iteration,
        timeline_message=analysis["timeline_message"],
        occurred_at=analysis["occurred_at"],
        stamp=stamp,
    )


_CACHED_FIELDS = (
    "request_id",
    "kind",
    "level",
    "is_spinning",
    "reason",
    "suggestions",
    "next_actions",
    "analysis",
    "fallback_reason",
    "occurred_at",
)


def cached(analysis: ReflectionRecord) -> ReflectionCachedRecord:
    """The ``reflection_cached`` event that keeps an analysis in the family's state."""
    record: ReflectionCachedRecord = {
        **HEADER,
        "type": "reflection_cached",
        "event_id": analysis["reflection_id"],
        "loop_id": analysis["loop_id"],
        "occurred_at": analysis["occurred_at"],
        "payload": {k: analysis[k] for k in _CACHED_FIELDS},  # type: ignore[literal-required]
    }
    return record


def register_analyst(
    app: LoopwardenApp, resources: WorkerResources, capability: Capability
) -> ReflectionAnalyst:
    """Declare the ``analyze_reflections`` agent (memories as context for the model)."""
    settings = app.loopwarden
    memory = LanceMemoryContext(shared_memory(resources))
    stamp = analyst_stamp(settings.analyst)
    analyst = ReflectionAnalyst(
        settings.analyst, memory, language=settings.detection.language, tracer=app.otel_tracer
    )
    outputs = app.outputs

    async def handle(record: Record) -> None:
        decoded = decode_record(
            record.value,
            record.key,
            record.source,
            settings.limits.max_event_bytes,
            validate_reflection_request,
        )
        for letter in decoded.dead_letters:
            app.dead_letters.send(letter)
        for _, request in decoded.events:
            await analyze(record, request)

    async def analyze(record: Record, request: dict[str, Any]) -> None:
        with process_span(
            app.otel_tracer,
            record.source,
            key=request["loop_id"],
            trace_context=request.get("trace_context"),
            headers=record.headers,
            group=settings.app_id,
            attributes={
                "gen_ai.conversation.id": request["loop_id"],
                "loopwarden.request.kind": request["kind"],
            },
        ) as span:
            analysis = await analyst.analyze(request)
            if span is not None and analysis["kind"] == "semantic_spin_check":
                span.set_attribute("loopwarden.spin.confirmed", bool(analysis["is_spinning"]))
        outputs.emit("reflections", analysis)
        if analysis["kind"] == "semantic_spin_check" and analysis["is_spinning"]:
            recent = request.get("recent_actions") or []
            event_ids = [a["event_id"] for a in recent]
            # the check's trigger is the latest of the recent actions (it said iteration 0)
            iteration = int(recent[-1].get("iteration") or 0) if recent else 0
            warning = logic_spin_warning(analysis, event_ids, stamp, iteration)
            outputs.emit("warnings", carried(warning, request.get("trace_context")))
        outputs.emit("loop_completions", cached(analysis))

    run_capability(app, capability, handle, concurrency=settings.analyst.concurrency)
    return analyst
