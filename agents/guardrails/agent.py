"""The Faust side of the guardrails: completions and overrides → decisions, warnings.

Records on the loop-completions topic are keyed by family id, so a family's
state (the ``loop-family`` table) lives with its partition; a record that
arrived on another partition is re-routed there (the completions re-route
topic). A family idle for ``limits.idle_family_ttl_s`` of event time starts
fresh, and its state is reclaimed (the keyed-state kit, with every record's state
written at once: the HTTP API reads families straight from the table). Decisions go to the
decisions topic keyed by family, guardrail warnings to the warnings topic keyed
by loop id; HTTP callers waiting for an event are answered through
``app.replies``.
"""

from __future__ import annotations

from typing import Any

from loopwarden.agents.guardrails.api import register_guardrails_api
from loopwarden.agents.guardrails.declaration import FAMILY_STATES
from loopwarden.agents.guardrails.records import GuardrailProcessor, GuardrailRecordOutcome
from loopwarden.streams.runtime.app import LoopwardenApp
from loopwarden.streams.runtime.capability import Capability
from loopwarden.streams.runtime.keyed_runner import run_keyed
from loopwarden.streams.runtime.records import Record
from loopwarden.streams.runtime.resources import WorkerResources
from loopwarden.streams.runtime.table_store import TableStore


def register_guardrails(
    app: LoopwardenApp, resources: WorkerResources, capability: Capability
) -> TableStore:
    """Declare the family table and the ``apply_guardrails`` agent (and, with the web
    port open, the guardrails' HTTP API)."""
    settings = app.loopwarden
    processor = GuardrailProcessor.for_settings(settings, partitions=settings.topics.partitions)

    def answer(outcome: GuardrailRecordOutcome, record: Record) -> None:
        for event_id, result in outcome.replies:
            app.replies.resolve(event_id, result)
            app.loop_health.family(result)

    wiring = run_keyed(
        app, capability, FAMILY_STATES, processor, after=answer, record_span=describe_outcome
    )
    if settings.web_port:
        register_guardrails_api(app, wiring.store)
    return wiring.store


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
