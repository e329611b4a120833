"""From a raw actions record to family warnings, with no broker involved.

The fleet role is a second reader of the actions topic (the monitor owns it and
dead-letters what is wrong there; the fleet passes bad input over and counts it).
An event belongs to the family of its root loop (``root_loop_id``, else
``parent_loop_id``, else its own loop); with ``partitions`` set (the worker), an
event whose root maps to another partition than the one it arrived on becomes a
:class:`~loopwarden.agents.monitor.records.Reroute` to the fleet re-route topic,
so a family's state lives on its root's partition whatever its loops' keys (the
client keys a delegated loop's events by the root, so they seldom take that hop).
A failed call also goes to its tool's owner (key ``tool\x1f<action_type>``) for
:mod:`~loopwarden.agents.fleet.tool_outage`. A re-routed event is redacted first
(it is written to another topic).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, cast

from loopwarden.agents.fleet.declaration import FAMILY_STATES, FleetState
from loopwarden.agents.fleet.family_monitor import FamilyMonitor
from loopwarden.agents.fleet.outage_board import OutageBoard
from loopwarden.agents.fleet.state import FamilyState
from loopwarden.agents.fleet.tool_health import ToolHealth
from loopwarden.agents.fleet.tool_outage import TOOL_KEY_PREFIX, ToolOutages, tool_key
from loopwarden.agents.fleet.tool_tally import ToolTally
from loopwarden.agents.provenance import fleet_stamp
from loopwarden.schemas.dead_letter import SourcePosition
from loopwarden.schemas.events import (
    ActionEvent,
)
from loopwarden.schemas.outputs import FleetWarningRecord, ToolOutageRecord, WarningRecord
from loopwarden.schemas.positions import Origin
from loopwarden.schemas.records import decode_record
from loopwarden.schemas.shared_decode import SharedActionDecodes, validate_unredacted
from loopwarden.settings import FleetSettings, Settings
from loopwarden.streams.client.event_builder import encode_event
from loopwarden.streams.runtime.state.offline import OfflineStates
from loopwarden.streams.runtime.state.protocol import KeyedOutcome, KeyedRecord
from loopwarden.streams.runtime.state.reroute import made_once, reroute_lazily
from loopwarden.streams.runtime.state.view import StateView

TOOL_KEY_BYTES = TOOL_KEY_PREFIX.encode()


def _as_is(event: ActionEvent) -> ActionEvent:
    """What the fleet reads of an event: as validated (it redacts what it re-routes)."""
    return event


@dataclass(slots=True)
class FleetRecordOutcome(KeyedOutcome[FleetState]):
    """What one record produced; ``states`` are the families (by root loop id) and the
    tools' outage states (by tool key) to write back. Its dead letters stay empty: the
    monitor dead-letters bad actions (see :attr:`passed_over`)."""

    warnings: list[WarningRecord] = field(default_factory=list)
    fleet_warnings: list[FleetWarningRecord] = field(default_factory=list)
    passed_over: int = 0
    """Elements that were not valid actions (the monitor's dead letters)."""
    tool_outages: list[ToolOutageRecord] = field(default_factory=list)
    """Outage notices, for the monitors (tool-outages topic)."""

    OUTPUTS = (
        ("warnings", "warnings"),
        ("fleet_warnings", "fleet_warnings"),
        ("tool_outages", "tool_outages"),
    )


class FleetProcessor:
    """Decode actions records and apply them to family state."""

    def __init__(
        self,
        settings: FleetSettings | None = None,
        max_event_bytes: int = 256 * 1024,
        partitions: int = 0,
        *,
        decodes: SharedActionDecodes | None = None,
        board: OutageBoard | None = None,
    ) -> None:
        """``decodes``: the worker's decoded actions records, shared with the monitor
        (else this processor's own); ``board``: the outages declared (the tool-outages
        topic), whose failures go to the tool's owner from every partition."""
        settings = settings or FleetSettings()
        self.settings = settings
        self.outages = settings.outage_enabled
        self.monitor = FamilyMonitor(settings, fleet_stamp(settings, max_event_bytes))
        self.tally = ToolTally()
        """How each tool fares across the loops seen here (the loop-health page)."""
        self.board = board
        self.decodes = decodes or SharedActionDecodes()
        self.health = ToolHealth(settings.outage_baseline_calls)
        """Each tool's recent calls and usual failure rate here: which failures may be
        an outage's."""
        self.max_event_bytes = max_event_bytes
        self.partitions = partitions

    @classmethod
    def for_settings(
        cls,
        settings: Settings,
        partitions: int = 0,
        *,
        decodes: SharedActionDecodes | None = None,
        board: OutageBoard | None = None,
    ) -> FleetProcessor:
        """The processor every entry point uses: fleet settings and limits (the rest as
        in the constructor)."""
        return cls(
            settings.fleet,
            settings.limits.max_event_bytes,
            partitions=partitions,
            decodes=decodes,
            board=board,
        )

    @property
    def stamp(self) -> dict[str, Any]:
        """The ``produced_by`` stamp of this processor's outputs."""
        return self.monitor.stamp or {}

    def process(self, record: KeyedRecord, states: StateView[FleetState]) -> FleetRecordOutcome:
        """Process one record with its families' and tools' ``states``; a re-routed
        record (``record.origin`` set) is applied here, whatever its key; the record's
        headers are not read."""
        value, key, source, origin = record.value, record.key, record.source, record.origin
        # decoded once for the monitor and the fleet (whichever reads it first)
        decoded = self.decodes.decode(value, key, source, self.max_event_bytes, _as_is)
        if decoded.dead_letters:  # the monitor's to dead-letter: read as a second reader
            decoded = decode_record(
                value, key, source, self.max_event_bytes, validate_unredacted, owns_topic=False
            )
        outcome = FleetRecordOutcome(states=states.changed, passed_over=len(decoded.dead_letters))
        for_tool = origin is not None and key is not None and key.startswith(TOOL_KEY_BYTES)
        for index, event in decoded.events:
            at = origin or Origin(source.partition, source.offset, index)
            if for_tool:  # a failure routed to its tool's owner
                self._tool_failure(event, states, at, outcome)
                continue
            redacted = made_once(event.redacted)  # only for a re-route, once for either
            payload = event.payload
            if origin is None and self.outages and payload.turn != "message":
                lane = source.partition
                self.health.count(payload.action_type, event.loop_id, payload.failed, lane)
            if (
                origin is None
                and self.outages
                and payload.failed
                and (
                    self._tool_down(payload.action_type, source.partition) or self._declared(event)
                )
            ):
                target = tool_key(event.payload.action_type)
                moved = (
                    reroute_lazily(redacted, target, self.partitions, at)
                    if self.partitions
                    else None
                )
                if moved is not None:
                    outcome.reroutes.append(moved)
                else:
                    self._tool_failure(event, states, at, outcome)
            self._family_event(event, redacted, states, origin, at, outcome)
        return outcome

    def _tool_down(self, tool: str, lane: int) -> bool:
        """The tool fails far more than usual in this partition (:mod:`.tool_health`)."""
        cfg = self.settings
        share, significance = cfg.outage_failure_share, cfg.outage_significance
        return self.health.down(tool, share, significance, lane)

    def _declared(self, event: ActionEvent) -> bool:
        """The failure is one of an outage already declared (an outage notice covers it,
        whichever partition it comes from)."""
        return self.board is not None and self.board.declared(event)

    def _family_event(
        self,
        event: ActionEvent,
        redacted: Callable[[], ActionEvent],
        view: StateView[FleetState],
        origin: Origin | None,
        at: Origin,
        outcome: FleetRecordOutcome,
    ) -> None:
        root = event.payload.root(event.loop_id)
        if origin is None and self.partitions:
            reroute = reroute_lazily(redacted, root, self.partitions, at)
            if reroute is not None:
                outcome.reroutes.append(reroute)
                return
        state = cast(FamilyState, view.current(root, event.occurred_at))  # a root: a family
        outcome.seen.append((event.event_id, event.loop_id))
        outcome.states[root] = state
        if state.applied.applied(at):
            return  # processed before a restart
        state.applied.mark(at)
        payload = event.payload
        if payload.turn != "message":
            self.tally.count(payload.action_type, event.loop_id, payload.failed, event.occurred_at)
        found = self.monitor.observe(state, event)
        outcome.events += 1
        if found is not None:
            outcome.warnings.extend(found.warnings)
            outcome.fleet_warnings.extend(found.fleet_warnings)

    def _tool_failure(
        self,
        event: ActionEvent,
        view: StateView[FleetState],
        at: Origin,
        outcome: FleetRecordOutcome,
    ) -> None:
        key = tool_key(event.payload.action_type)
        tool = view.stored(key)  # an outage's state does not start afresh when idle
        if not isinstance(tool, ToolOutages):
            tool = ToolOutages(event.payload.action_type)
        tool.partition = view.partition
        outcome.states[key] = tool
        if tool.applied.applied(at):
            return
        tool.applied.mark(at)
        warnings, fleet_warnings, notices = tool.observe(event, self.settings, self.stamp)
        outcome.warnings.extend(warnings)
        outcome.fleet_warnings.extend(fleet_warnings)
        outcome.tool_outages.extend(notices)


def decide_offline(settings: Settings, events: Iterable[ActionEvent]) -> FleetRecordOutcome:
    """Every output of the fleet role for ``events`` applied in this order, as a worker
    applies a family's events (they share its root's partition): what the demo and the
    fault suite expect the worker to send."""
    processor = FleetProcessor.for_settings(settings)
    states = OfflineStates.for_settings(FAMILY_STATES, settings)
    total = FleetRecordOutcome()
    for offset, event in enumerate(events):
        source = SourcePosition("offline", 0, offset)
        out = states.apply(processor, encode_event(event, 0.0), None, source)
        total.warnings += out.warnings
        total.fleet_warnings += out.fleet_warnings
        total.tool_outages += out.tool_outages
    return total
