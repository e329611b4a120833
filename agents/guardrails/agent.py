"""The Faust side of the guardrails: completions and overrides → decisions, warnings.

Records on the loop-completions topic are keyed by family id, so a family's
state (the ``loop-family`` table) lives with its partition. Decisions go to the
decisions topic keyed by family, guardrail warnings to the warnings topic keyed
by loop id; HTTP callers waiting for an event are answered through
``app.replies``.
"""

from __future__ import annotations

import logging
from typing import Any

from loopwarden.agents.guardrails.records import GuardrailProcessor
from loopwarden.agents.guardrails.state import FamilyState
from loopwarden.schemas import codec
from loopwarden.streams.app import LoopwardenApp
from loopwarden.streams.dead_letters import processing_error, send_dead_letter, source_of
from loopwarden.streams.table_store import TableStore

log = logging.getLogger(__name__)

FAMILY_TABLE = "loop-family"


def register_guardrails(app: LoopwardenApp) -> TableStore:
    """Declare the completions topic, the family table and the ``apply_guardrails`` agent."""
    settings = app.loopwarden
    names = settings.topics
    completions = app.raw_topic(names.loop_completions)
    app.raw_topic(names.decisions)
    table = app.Table(
        FAMILY_TABLE,
        partitions=names.partitions,
        key_type=bytes,
        value_type=bytes,
        help="Per-family guardrail state (traces, fatigue, reruns, bias history, overrides).",
    )
    store = TableStore(table, app.sink)
    processor = GuardrailProcessor(settings.guardrails, settings.limits.max_event_bytes)
    sink = app.sink

    def load_state(family: str) -> FamilyState | None:
        data = store.get(family.encode())
        return FamilyState.restore(family, data) if data else None

    @app.agent(completions, name="apply_guardrails")
    async def apply_guardrails(stream: Any) -> None:
        async for event in stream.events():
            message = event.message
            source = source_of(message)
            try:
                outcome = processor.process(message.value, message.key, source, load_state)
            except Exception as exc:  # a bug must not stop the worker or lose the record
                send_dead_letter(sink, names.dead_letter, processing_error(exc, message, source))
                continue
            for family, state in outcome.states.items():
                store.put(family.encode(), state.snapshot(), source.partition)
            for letter in outcome.dead_letters:
                send_dead_letter(sink, names.dead_letter, letter)
            for decision in outcome.decisions:
                sink.add(names.decisions, decision["family_id"].encode(), codec.dumps(decision))
            for warning in outcome.warnings:
                sink.add(names.warnings, warning["loop_id"].encode(), codec.dumps(warning))
            for event_id, result in outcome.replies:
                app.replies.resolve(event_id, result)
            if sink.full:
                await sink.flush()

    return store
