"""Re-running the workers' decisions over recorded records, with the workers' own code.

:class:`Replayer` feeds each record to the processor of the capability that reads
its topic — every capability of :func:`~loopwarden.agents.capabilities.replayable`
(the action monitor, the guardrails, the fleet, experience), built by the same
``for_settings`` as the worker's — keeping every loop's and family's state in memory,
and keeps the named outputs of the outcome that are audited (warnings, reflection
requests, decisions, advice). A capability whose outputs come from settling outcomes
against a store (experience) is settled by its replay's side-effect-free step, told
what the workers recorded (``recorded``: the advice names the store versions it was
matched at). Records before the audited range rebuild state silently;
records inside it are the ones whose outputs are collected. Nothing is re-routed:
an event is applied where it was read, under the position the worker would
have applied it at (its origin), so duplicate detection works as it did live.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import chain
from typing import Any, Protocol

from loopwarden.agents.capabilities import replayable
from loopwarden.schemas import codec
from loopwarden.schemas.dead_letter import DeadLetter, SourcePosition
from loopwarden.schemas.families import family_of
from loopwarden.settings import Settings
from loopwarden.streams.runtime.capability import Capability
from loopwarden.streams.runtime.state.offline import OfflineStates
from loopwarden.streams.runtime.state.protocol import KeyedDeclaration

Output = dict[str, Any]
ID_FIELDS = {"warning": "warning_id", "reflection_request": "request_id"}
ID_FIELDS["rerun_decision"] = "decision_id"
ID_FIELDS["fleet_warning"] = "warning_id"
ID_FIELDS["advice"] = "advice_id"


class RecordLike(Protocol):
    """What the replayer reads of a consumed record (aiokafka's ConsumerRecord)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None


@dataclass(frozen=True, slots=True)
class Position:
    """Where a record was read: topic, partition, offset."""

    topic: str
    partition: int
    offset: int

    def __str__(self) -> str:
        return f"{self.topic}[{self.partition}]@{self.offset}"


@dataclass(frozen=True, slots=True)
class Reproduced:
    """One output the replay produced, with the position of the record that caused it."""

    kind: str
    output: Output
    position: Position
    output_name: str
    """The named output it is (``warnings``, ``reflection_requests``, ``decisions``)."""

    @property
    def output_id(self) -> str:
        """The output's own id (warning_id, request_id or decision_id)."""
        return str(self.output[ID_FIELDS[self.kind]])


def output_kind(output: Output) -> str | None:
    """``warning``, ``reflection_request`` or ``rerun_decision`` (None: something else)."""
    kind = output.get("type")
    return kind if kind in ID_FIELDS else None


@dataclass(slots=True)
class ReplayState:
    """Everything a replay has learnt so far."""

    outputs: dict[str, Reproduced] = field(default_factory=dict)
    events: dict[str, tuple[str, Position]] = field(default_factory=dict)
    """Event id → (loop id, position) of every event inside the range."""
    dead_letters: dict[tuple[str, int, int, int], DeadLetter] = field(default_factory=dict)
    positions: set[tuple[str, int, int]] = field(default_factory=set)
    """(topic, partition, offset) of every record inside the range."""
    dead_letter_keys: set[bytes] | None = None
    """Record keys whose dead letters are compared (None: all; a one-loop audit)."""
    not_replayed: dict[str, str] = field(default_factory=dict)
    """Output id → why the replay could not reproduce it (set aside by the comparison)."""
    history_loops: set[str] = field(default_factory=set)
    history_event_ids: set[str] = field(default_factory=set)
    history_records: int = 0
    records: int = 0
    skipped: Counter[str] = field(default_factory=Counter)


class Replayer:
    """Apply recorded records to in-memory state and collect the outputs inside the range."""

    def __init__(
        self,
        settings: Settings,
        loop_id: str | None = None,
        recorded: Mapping[str, Output] | None = None,
    ) -> None:
        self.settings = settings
        self.loop_id = loop_id
        self.family = family_of(loop_id) if loop_id is not None else None
        self.capabilities: dict[str, Capability] = {c.role: c for c in replayable()}
        self.processors: dict[str, Any] = {
            role: c.replay.build(settings) for role, c in self.capabilities.items() if c.replay
        }
        self.by_topic: dict[str, list[str]] = {}
        for role, c in self.capabilities.items():
            for topic in c.inputs(settings.topics)[:1]:  # not the re-route topics
                self.by_topic.setdefault(topic, []).append(role)
        self.states: dict[str, OfflineStates[Any]] = {
            role: OfflineStates.for_settings(_keyed(c), settings)
            for role, c in self.capabilities.items()
        }
        self.settles = {
            role: settle
            for role, c in self.capabilities.items()
            if c.replay and (settle := c.replay.build_settle(settings, recorded or {}))
        }
        for role, processor in self.processors.items():
            if hasattr(processor, "any_open"):  # it skips records while no key holds state
                processor.any_open = lambda held=self.states[role]: bool(held)
        self.state = ReplayState()
        if loop_id is not None and self.family is not None:
            self.state.dead_letter_keys = {loop_id.encode(), self.family.encode()}

    @property
    def loops(self) -> dict[str, Any]:
        """Every loop's state so far (the monitor's)."""
        return self.states["monitor"].states

    @property
    def families(self) -> dict[str, Any]:
        """Every family's state so far (the guardrails')."""
        return self.states["guardrails"].states

    @property
    def stamps(self) -> dict[str, Output]:
        """The replay's ``produced_by`` stamps, by component."""
        return {
            role: processor.stamp
            for role, processor in self.processors.items()
            if hasattr(processor, "stamp")
        }

    def apply(self, record: RecordLike, inside: bool) -> None:
        """Apply one record (to every capability reading its topic); collect its outputs
        when it is ``inside`` the range."""
        roles = self.by_topic.get(record.topic)
        if roles is None:
            raise ValueError(f"not an input topic: {record.topic!r}")
        source = SourcePosition(record.topic, record.partition, record.offset, record.timestamp)
        for number, role in enumerate(roles):
            states = self.states[role]
            out = states.apply(self.processors[role], record.value, record.key, source)
            outputs = out.outputs()
            settle = self.settles.get(role) if inside else None  # history: state only
            if settle is not None:
                outputs = chain(outputs, settle([out]))
            replay = self.capabilities[role].replay
            assert replay is not None  # replayable() holds only capabilities with one
            ours = self._ours(replay.keyed_by)
            if number == 0:  # the topic's owner: its events and dead letters, noted once
                self._note(record, inside, out.seen, out.dead_letters, ours)
            else:  # another reader's own events (experience's task starts and ends)
                self._note_other_readers(record, inside, out.seen, ours)
            if inside:
                for name, output in outputs:
                    kind = output_kind(output)
                    if name in replay.audited and kind is not None:
                        self._keep(name, kind, output, record, ours(output))
            if settle is not None:
                self.state.not_replayed.update(settle.skipped)
                settle.skipped.clear()

    def _ours(self, keyed_by: str) -> Any:
        """Whether an output (or a loop id) is about the replayed loop."""

        def ours(about: Output | str) -> bool:
            if isinstance(about, str):
                loop = about
            elif "loop_id" in about:
                loop = about["loop_id"]
            else:  # a fleet warning: about the family, it names the loops it told
                return self.loop_id == about["root_loop_id"] or self.loop_id in about["loop_ids"]
            return family_of(loop) == self.family if keyed_by == "family" else loop == self.loop_id

        return ours

    def _note_other_readers(
        self, record: RecordLike, inside: bool, seen: list[tuple[str, str]], ours: Any
    ) -> None:
        """Events only a later reader of the topic sees count as inputs, or as history."""
        state = self.state
        position = Position(record.topic, record.partition, record.offset)
        for event_id, loop in seen:
            if self.loop_id is not None and not ours(loop):
                continue
            if inside:
                state.events.setdefault(event_id, (loop, position))
            else:
                state.history_loops.add(loop)
                state.history_event_ids.add(event_id)

    def _note(
        self,
        record: RecordLike,
        inside: bool,
        seen: list[tuple[str, str]],
        dead_letters: list[DeadLetter],
        ours: Any,
    ) -> None:
        state = self.state
        everything = self.loop_id is None
        if not inside:
            state.history_records += 1
            for event_id, loop in seen:
                if everything or ours(loop):
                    state.history_loops.add(loop)
                    state.history_event_ids.add(event_id)
            return
        state.records += 1
        position = Position(record.topic, record.partition, record.offset)
        state.positions.add((record.topic, record.partition, record.offset))
        for event_id, loop in seen:
            if everything or ours(loop):
                state.events[event_id] = (loop, position)
        keys = state.dead_letter_keys
        if keys is None or record.key in keys:  # a bad record names its loop by its key only
            for letter in dead_letters:
                key = (record.topic, record.partition, record.offset, letter.batch_index or 0)
                state.dead_letters[key] = letter

    def encoded(self) -> dict[bytes, str]:
        """Each reproduced output's bytes as a worker writes them → its id."""
        return {codec.dumps(r.output): output_id for output_id, r in self.state.outputs.items()}

    def _keep(self, name: str, kind: str, output: Output, record: RecordLike, ours: bool) -> None:
        if self.loop_id is not None and not ours:
            return
        position = Position(record.topic, record.partition, record.offset)
        reproduced = Reproduced(kind, output, position, name)
        self.state.outputs[reproduced.output_id] = reproduced


def _keyed(capability: Capability) -> KeyedDeclaration[Any]:
    """A replayable capability's state declaration (a replay re-runs keyed processors)."""
    if capability.state is None:
        raise TypeError(f"{capability.role}: a replayable capability declares its keyed state")
    return capability.state
