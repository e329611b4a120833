"""From a raw Kafka record to findings, with no broker involved.

A record holds one event (a JSON object) or a batch (a JSON array of objects
that share a partition). :class:`RecordProcessor` decodes and validates it
(secrets are redacted by the validator), sends what is wrong to dead letters
(one per bad element, the rest still processed) and applies the good events in
record order through :class:`LoopMonitor`. The Faust agent, ``loopwarden
detect`` and audits all go through here.

A loop whose next event comes more than the idle TTL (event time) after its last one
starts afresh: its :class:`~loopwarden.streams.runtime.state.view.StateView` (the kit's,
with ``LOOP_STATES``' TTL) decides it from the events alone, so the worker, ``detect``
and ``replay`` agree whatever the wall clock did.

With ``partitions`` set (the worker), an event whose loop id does not map to the
partition it arrived on (murmur2, Kafka's default partitioner) is not applied
here: it becomes a :class:`~loopwarden.streams.runtime.state.reroute.Reroute` to the
loop's own partition, carrying its origin, so every loop's state lives in one place
whatever the producer did.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from loopwarden.agents.monitor.declaration import LOOP_STATES
from loopwarden.agents.monitor.loop_monitor import LoopMonitor
from loopwarden.agents.monitor.state import LoopState
from loopwarden.agents.provenance import monitor_stamp
from loopwarden.schemas.dead_letter import SourcePosition
from loopwarden.schemas.events import ActionEvent
from loopwarden.schemas.outputs import LessonRecord, ReflectionRequestRecord, WarningRecord
from loopwarden.schemas.redaction import default_redactor
from loopwarden.schemas.shared_decode import SharedActionDecodes
from loopwarden.schemas.trace_context import carried
from loopwarden.settings import DetectionSettings, Settings
from loopwarden.streams.runtime.state.protocol import KeyedOutcome, KeyedRecord
from loopwarden.streams.runtime.state.reroute import routed
from loopwarden.streams.runtime.state.view import StateView

if TYPE_CHECKING:
    from loopwarden.agents.fleet.outage_board import OutageBoard


class EventScope(Protocol):
    """An event's open trace spans (see :mod:`loopwarden.streams.runtime.telemetry.spans`)."""

    trace_context: dict[str, str] | None

    def end(self, warnings: Sequence[Mapping[str, Any]], state: Any = None) -> None: ...

    def fail(self, exc: BaseException) -> None: ...


class EventInstrument(Protocol):
    """Opens an :class:`EventScope` around each event's processing (tracing on)."""

    def begin(self, event: Any, source: SourcePosition, headers: Sequence[Any]) -> EventScope: ...


@dataclass(slots=True)
class RecordOutcome(KeyedOutcome[LoopState]):
    """Everything one record produced; ``states`` are the loops to write back."""

    warnings: list[WarningRecord] = field(default_factory=list)
    requests: list[ReflectionRequestRecord] = field(default_factory=list)
    lessons: list[LessonRecord] = field(default_factory=list)
    warned: list[tuple[str, float]] = field(default_factory=list)
    """(kind, the triggering event's published_at) of each warning, for latency."""
    skipped: int = 0
    duplicates: list[tuple[str, str, int]] = field(default_factory=list)
    """(loop id, event id, the loop's count so far) of each event skipped because its id
    was already applied in its loop."""

    OUTPUTS = (
        ("warnings", "warnings"),
        ("memory_lessons", "lessons"),
        ("reflection_requests", "requests"),
    )


class RecordProcessor:
    """Decode a record and apply its events to per-loop state (module docstring)."""

    def __init__(
        self,
        detection: DetectionSettings | None = None,
        max_event_bytes: int = 256 * 1024,
        partitions: int = 0,
        idle_ttl_s: float = float("inf"),
        *,
        decodes: SharedActionDecodes | None = None,
        outages: OutageBoard | None = None,
    ) -> None:
        """``idle_ttl_s``: the loops' idle TTL the states are given with, named in the
        outputs' stamp (the views apply it); ``decodes``: the worker's decoded actions
        records, shared with the fleet (else this processor's own); ``outages``: the tool
        outages the fleet role announced (a failure one covers is applied without
        running the detectors)."""
        detection = detection or DetectionSettings()
        stamp = monitor_stamp(detection, idle_ttl_s, max_event_bytes)
        self.monitor = LoopMonitor(detection, stamp)
        self.max_event_bytes = max_event_bytes
        self.partitions = partitions
        self.instrument: EventInstrument | None = None
        """Set by the worker when tracing is on: spans per event."""
        self.decodes = decodes or SharedActionDecodes()
        self.outages = outages

    @classmethod
    def for_settings(
        cls,
        settings: Settings,
        partitions: int = 0,
        *,
        decodes: SharedActionDecodes | None = None,
        outages: OutageBoard | None = None,
    ) -> RecordProcessor:
        """The processor every entry point uses: detection and limits from ``settings``
        (the rest as in the constructor). Switches on the redaction prefilter of this
        process (built in the background)."""
        default_redactor().use_prefilter()
        limits = settings.limits
        return cls(
            settings.detection,
            limits.max_event_bytes,
            partitions,
            idle_ttl_s=LOOP_STATES.idle_ttl_s(settings),
            decodes=decodes,
            outages=outages,
        )

    @property
    def stamp(self) -> dict[str, Any]:
        """The ``produced_by`` stamp of this processor's outputs."""
        return self.monitor.stamp

    def process(self, record: KeyedRecord, states: StateView[LoopState]) -> RecordOutcome:
        """Process one record with its loops' ``states``.

        A re-routed record (``record.origin`` set) is applied here, whatever its key;
        otherwise events are positioned by the record's source and routed. Warnings and
        requests carry the trace context of their event (its span's with tracing on; the
        record's headers are read for a single event's ``traceparent``).
        """
        value, key, source, headers = record.value, record.key, record.source, record.headers
        decoded = self.decodes.decode(value, key, source, self.max_event_bytes, _redacted)
        outcome = RecordOutcome(states=states.changed, dead_letters=decoded.dead_letters)
        changed = states.changed
        origin = record.origin
        here = routed(decoded.events, source, origin, self.partitions, _loop_of, outcome.reroutes)
        for _, event, at in here:
            state = states.current(event.loop_id, event.occurred_at)
            instrument = self.instrument
            scope = None if instrument is None else instrument.begin(event, source, headers)
            duplicates = state.duplicates
            outages = self.outages
            covered = outages is not None and bool(outages) and outages.covers(event)
            try:
                findings = self.monitor.observe(state, event, at, outage=covered)
            except BaseException as exc:
                if scope is not None:
                    scope.fail(exc)
                raise
            outcome.seen.append((event.event_id, event.loop_id))
            if findings is None:
                if scope is not None:
                    scope.end(())
                outcome.skipped += 1
                if state.duplicates > duplicates:
                    outcome.duplicates.append((event.loop_id, event.event_id, state.duplicates))
                    changed[event.loop_id] = state  # the count is kept with the loop
                continue
            changed[event.loop_id] = state
            outcome.events += 1
            if findings.warnings or findings.requests:
                self._carry(findings, event, scope, outcome)
            if scope is not None:
                scope.end(findings.warnings, state)
            outcome.warnings.extend(findings.warnings)
            outcome.requests.extend(findings.requests)
            outcome.lessons.extend(findings.lessons)
        return outcome

    @staticmethod
    def _carry(findings: Any, event: Any, scope: EventScope | None, outcome: RecordOutcome) -> None:
        trace_context = event.trace_context if scope is None else scope.trace_context
        for output in (*findings.warnings, *findings.requests):
            carried(output, trace_context)
        if event.published_at is not None:
            outcome.warned.extend((w["kind"], event.published_at) for w in findings.warnings)


def _redacted(event: ActionEvent) -> ActionEvent:
    """What the monitor reads of an event: its secrets redacted."""
    return event.redacted()


def _loop_of(event: Any) -> str:
    """The key an event's state lives under (its partition's)."""
    return event.loop_id
