"""The Faust side of the guardrails: completions and overrides → decisions, warnings.

Records on the loop-completions topic are keyed by family id, so a family's
state (the ``loop-family`` table) lives with its partition; a record that
arrived on another partition is re-routed there (the completions re-route
topic). A family idle for ``limits.idle_family_ttl_s`` of event time starts
fresh, and a timer deletes idle families to reclaim memory. Decisions go to the
decisions topic keyed by family, guardrail warnings to the warnings topic keyed
by loop id; HTTP callers waiting for an event are answered through
``app.replies``.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from loopwarden.agents.capabilities import WorkerResources
from loopwarden.agents.guardrails.api import register_guardrails_api
from loopwarden.agents.guardrails.records import GuardrailProcessor
from loopwarden.agents.guardrails.state import FamilyState
from loopwarden.schemas.positions import origin_from_headers
from loopwarden.streams.runtime.app import LoopwardenApp
from loopwarden.streams.runtime.capability import Capability
from loopwarden.streams.runtime.capability_runner import run_capability
from loopwarden.streams.runtime.runner import Record
from loopwarden.streams.runtime.state.expiry import (
    IdleLoopSweeper,
    snapshot_expiry,
    trusted_event_time,
)
from loopwarden.streams.runtime.state.sweeps import follow_assignment
from loopwarden.streams.runtime.table_store import TableStore
from loopwarden.streams.runtime.telemetry.spans import process_span
from loopwarden.streams.tools.topics import FAMILY_TABLE

log = logging.getLogger(__name__)


def register_guardrails(
    app: LoopwardenApp, resources: WorkerResources, capability: Capability
) -> TableStore:
    """Declare the family table and the ``apply_guardrails`` agent (and, with the web
    port open, the guardrails' HTTP API)."""
    settings = app.loopwarden
    names = settings.topics
    table = app.Table(
        FAMILY_TABLE,
        partitions=names.partitions,
        key_type=bytes,
        value_type=bytes,
        help="Per-family guardrail state (traces, fatigue, reruns, bias history, overrides).",
    )
    store = TableStore(table, app.sink)
    limits = settings.limits
    processor = GuardrailProcessor.for_settings(settings, partitions=names.partitions)
    sweeper = IdleLoopSweeper(
        limits.idle_family_ttl_s, limits.expiry_sweep_interval_s, limits.max_clock_skew_s
    )

    def load_state(family: str) -> FamilyState | None:
        data = store.get(family.encode())
        return FamilyState.restore(family, data) if data else None

    def peek(key: bytes) -> tuple[int, float] | None:
        data = store.get(key)
        return snapshot_expiry(data) if data else None

    follow_assignment(app, sweeper, names.loop_completions)

    def handle(record: Record) -> None:
        source = record.source
        origin = (
            origin_from_headers(record.headers) if source.topic != names.loop_completions else None
        )
        with process_span(
            app.otel_tracer,
            source,
            key=record.key.decode("utf-8", "replace") if record.key else None,
            trace_context=None,
            headers=record.headers,
            group=settings.app_id,
        ) as span:
            outcome = processor.process(record.value, record.key, source, load_state, origin)
            if span is not None:
                describe_outcome(span, outcome)
        for family, state in outcome.states.items():
            key = family.encode()
            store.put(key, state.snapshot(), source.partition)
            seen = trusted_event_time(
                state.updated_at, source.timestamp_ms, limits.max_clock_skew_s
            )
            sweeper.touch(key, state.partition, seen)
        for letter in outcome.dead_letters:
            app.dead_letters.send(letter)
        app.reroute(names.completions_reroute, outcome.reroutes)
        app.outputs.emit_all(outcome.outputs())
        for event_id, result in outcome.replies:
            app.replies.resolve(event_id, result)
            app.loop_health.family(result)
        if sweeper.due(source.partition, time.monotonic()):
            for key in sweeper.expired(source.partition, store.keys, peek):
                store.delete(key, source.partition)

    run_capability(app, capability, handle)
    if settings.web_port:
        register_guardrails_api(app, store)
    return store


def describe_outcome(span: Any, outcome: Any) -> None:
    """Loop-health attributes of a completion's process span: fatigue, reruns, decision."""
    for _, result in outcome.replies:
        reflection = result.get("reflection_result") or {}
        decision = result.get("decision_result") or {}
        if "reflection_fatigue" in reflection:
            span.set_attribute("loopwarden.fatigue", reflection["reflection_fatigue"])
        if decision.get("decision"):
            span.set_attribute("loopwarden.decision", decision["decision"])
            span.set_attribute("loopwarden.reruns", decision.get("rerun_count") or 0)
    if outcome.warnings:
        span.set_attribute("loopwarden.warning.kind", sorted({w["kind"] for w in outcome.warnings}))
