"""The Faust side of the fleet role: actions → family state → family warnings.

The agent reads the actions topic (second to the monitor) and the fleet re-route
topic as one stream, hands each record to :class:`FleetProcessor`, keeps the
families it changed in the ``fleet-family`` table (keyed by root loop id, so a
family's state lives with its root's partition; written once per offset commit, as
the monitor's loop states are) and sends each loop's warnings
to the warnings topic and one fleet warning per finding to the fleet-warnings
topic. Failed calls are routed to their tool's owner on the same re-route topic
(:mod:`~loopwarden.agents.fleet.tool_outage`); its outage notices go to the
tool-outages topic for the monitors. A family idle for ``fleet.idle_family_ttl_s``
of event time starts afresh; a sweep deletes idle families to reclaim memory.
"""

from __future__ import annotations

import logging
from typing import Any

from loopwarden.agents.fleet.declaration import FAMILY_STATES
from loopwarden.agents.fleet.outage_notices import shared_outage_board
from loopwarden.agents.fleet.records import FleetProcessor, FleetRecordOutcome
from loopwarden.agents.fleet.state import FamilyState
from loopwarden.schemas.shared_decode import SharedActionDecodes
from loopwarden.streams.runtime.app import LoopwardenApp
from loopwarden.streams.runtime.capability import Capability
from loopwarden.streams.runtime.keyed_runner import run_keyed
from loopwarden.streams.runtime.records import Record
from loopwarden.streams.runtime.resources import WorkerResources

log = logging.getLogger(__name__)


def register_fleet(app: LoopwardenApp, resources: WorkerResources, capability: Capability) -> Any:
    """Declare the family table and the ``watch_fleet`` agent on ``app``."""
    settings = app.loopwarden
    processor = FleetProcessor.for_settings(
        settings,
        partitions=settings.topics.partitions,
        decodes=resources.shared(SharedActionDecodes),
        board=shared_outage_board(app, resources),  # declared outages, every partition
    )
    app.loop_health.tools = processor.tally
    passed_over = 0

    def show(outcome: FleetRecordOutcome, record: Record) -> None:
        nonlocal passed_over
        for state in outcome.states.values():
            if isinstance(state, FamilyState) and len(state.loops) > 1:
                app.loop_health.family_tree(state)
        if outcome.passed_over:
            passed_over += outcome.passed_over
            log.debug(
                "fleet: %d element(s) that are not valid actions passed over (%d so far; the "
                "monitor dead-letters them)",
                outcome.passed_over,
                passed_over,
            )

    return run_keyed(app, capability, FAMILY_STATES, processor, after=show).agent
