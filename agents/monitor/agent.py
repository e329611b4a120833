"""The Faust side of the action monitor: a processor plus a declaration.

The agent reads raw bytes (a typed topic would stop the agent on the first
undecodable value) from the actions topic and its re-route topic and hands each
record to :class:`RecordProcessor` (a consumed message is a bundle of records, see
:mod:`loopwarden.streams.runtime.bundles`). The keyed-state kit
(:func:`~loopwarden.streams.runtime.keyed_runner.run_keyed`) keeps the loop states in
the ``loop-state`` table (written once per offset commit), reclaims idle loops,
re-routes, dead-letters and emits the outcome's named outputs (warnings, reflection
requests, lessons to remember); what is the monitor's own here is its metrics.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from loopwarden.agents.fleet.outage_notices import shared_outage_board
from loopwarden.agents.monitor.declaration import LOOP_STATES
from loopwarden.agents.monitor.records import RecordOutcome, RecordProcessor
from loopwarden.agents.spin.meaning import meaning
from loopwarden.errors import ConfigurationError
from loopwarden.schemas.shared_decode import SharedActionDecodes
from loopwarden.streams.runtime.app import LoopwardenApp
from loopwarden.streams.runtime.capability import Capability
from loopwarden.streams.runtime.keyed_runner import run_keyed
from loopwarden.streams.runtime.records import Record
from loopwarden.streams.runtime.resources import WorkerResources
from loopwarden.streams.runtime.telemetry.spans import EventSpans

log = logging.getLogger(__name__)


def register_action_monitor(
    app: LoopwardenApp, resources: WorkerResources, capability: Capability
) -> Any:
    """Declare the state table and the ``monitor_actions`` agent on ``app``."""
    settings = app.loopwarden
    processor = RecordProcessor.for_settings(
        settings,
        partitions=settings.topics.partitions,
        decodes=resources.shared(SharedActionDecodes),
        outages=shared_outage_board(app, resources),  # the fleet role's declared outages
    )
    if app.otel_tracer is not None:
        processor.instrument = EventSpans(app.otel_tracer, settings.app_id)
    metrics = app.metrics

    def count(outcome: RecordOutcome, record: Record) -> None:
        for loop_id, event_id, seen in outcome.duplicates:
            metrics.duplicate()
            if seen == 1:  # once per loop; the metric counts every one
                log.info(
                    "loop %s: event %s skipped, its id was already applied in this loop "
                    "(give every event its own event_id); further duplicates of this loop "
                    "are counted in loopwarden.events.duplicates",
                    loop_id,
                    event_id,
                )
        if outcome.warned:
            now = time.time()
            for kind, published_at in outcome.warned:
                metrics.warning_latency(kind, now - published_at)

    if "restated_message" in processor.monitor.detectors:
        load_encoder_at_start(app)
    return run_keyed(app, capability, LOOP_STATES, processor, after=count).agent


def load_encoder_at_start(app: LoopwardenApp) -> None:
    """Message turns are compared by meaning: the sentence encoder loads when the worker
    starts, in a thread (~2 s of CPU), not on the stream with the first message turn."""

    @app.task
    async def warm_sentence_encoder() -> None:
        try:
            await asyncio.to_thread(meaning, "loopwarden")
        except ConfigurationError as exc:
            log.error("%s", exc)
