"""Re-running the workers' decisions over recorded records, with the workers' own code.

:class:`Replayer` feeds records of the actions and loop-completions topics to the
very :class:`RecordProcessor` and :class:`GuardrailProcessor` the Faust agents
use (built by the same ``for_settings``), keeping every loop's and family's
state in memory. Records before the audited range rebuild state silently;
records inside it are the ones whose outputs are collected. Nothing is re-routed:
an event is applied where it was read, under the position the worker would
have applied it at (its origin), so duplicate detection works as it did live.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Protocol

from loopwarden.agents.guardrails.records import GuardrailProcessor
from loopwarden.agents.guardrails.state import FamilyState
from loopwarden.agents.monitor.records import RecordProcessor
from loopwarden.agents.monitor.state import LoopState
from loopwarden.schemas import codec
from loopwarden.schemas.dead_letter import DeadLetter, SourcePosition
from loopwarden.schemas.families import family_of
from loopwarden.settings import Settings

Output = dict[str, Any]
ID_FIELDS = {"warning": "warning_id", "reflection_request": "request_id"}
ID_FIELDS["rerun_decision"] = "decision_id"


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
    history_loops: set[str] = field(default_factory=set)
    history_events: int = 0
    history_records: int = 0
    records: int = 0
    skipped: Counter[str] = field(default_factory=Counter)


class Replayer:
    """Apply recorded records to in-memory state and collect the outputs inside the range."""

    def __init__(self, settings: Settings, loop_id: str | None = None) -> None:
        self.settings = settings
        self.actions_topic = settings.topics.actions
        self.completions_topic = settings.topics.loop_completions
        self.monitor = RecordProcessor.for_settings(settings)
        self.guardrails = GuardrailProcessor.for_settings(settings)
        self.loop_id = loop_id
        self.family = family_of(loop_id) if loop_id is not None else None
        self.loops: dict[str, LoopState] = {}
        self.families: dict[str, FamilyState] = {}
        self.state = ReplayState()
        if loop_id is not None and self.family is not None:
            self.state.dead_letter_keys = {loop_id.encode(), self.family.encode()}

    @property
    def stamps(self) -> dict[str, Output]:
        """The replay's ``produced_by`` stamps, by component."""
        return {"monitor": self.monitor.stamp, "guardrails": self.guardrails.stamp}

    def apply(self, record: RecordLike, inside: bool) -> None:
        """Apply one record; collect its outputs when it is ``inside`` the range."""
        if record.topic == self.actions_topic:
            self._apply_action(record, inside)
        elif record.topic == self.completions_topic:
            self._apply_completion(record, inside)
        else:
            raise ValueError(f"not an input topic: {record.topic!r}")

    def _source(self, record: RecordLike) -> SourcePosition:
        return SourcePosition(record.topic, record.partition, record.offset, record.timestamp)

    def _apply_action(self, record: RecordLike, inside: bool) -> None:
        out = self.monitor.process(record.value, record.key, self._source(record), self.loops.get)
        self.loops.update(out.states)
        self._note(record, inside, out.seen, out.dead_letters, lambda loop: loop == self.loop_id)
        if inside:
            for warning in out.warnings:
                self._keep("warning", warning, record, warning["loop_id"] == self.loop_id)
            for request in out.requests:
                self._keep(
                    "reflection_request", request, record, request["loop_id"] == self.loop_id
                )

    def _apply_completion(self, record: RecordLike, inside: bool) -> None:
        source = self._source(record)
        out = self.guardrails.process(record.value, record.key, source, self.families.get)
        self.families.update(out.states)

        def ours(loop: str) -> bool:
            return family_of(loop) == self.family

        self._note(record, inside, out.seen, out.dead_letters, ours)
        if inside:
            for decision in out.decisions:
                self._keep("rerun_decision", decision, record, ours(decision["loop_id"]))
            for warning in out.warnings:
                self._keep("warning", warning, record, ours(warning["loop_id"]))

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
            for _, loop in seen:
                if everything or ours(loop):
                    state.history_loops.add(loop)
                    state.history_events += 1
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

    def _keep(self, kind: str, output: Output, record: RecordLike, ours: bool) -> None:
        if self.loop_id is not None and not ours:
            return
        position = Position(record.topic, record.partition, record.offset)
        reproduced = Reproduced(kind, output, position)
        self.state.outputs[reproduced.output_id] = reproduced
