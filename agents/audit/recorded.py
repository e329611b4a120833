"""What the workers recorded: warnings, reflection requests, decisions and dead letters,
read back from their topics and indexed for the comparison."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from loopwarden.agents.audit.replayer import ID_FIELDS, Output, Position, RecordLike, output_kind
from loopwarden.errors import EventDecodeError
from loopwarden.schemas import codec
from loopwarden.schemas.dead_letter import DeadLetter

DeadLetterKey = tuple[str, int, int, int]


@dataclass(frozen=True, slots=True)
class RecordedOutput:
    """One output record as the workers wrote it."""

    kind: str
    output: Output
    position: Position


@dataclass(slots=True)
class Recorded:
    """Recorded outputs by id (a list: a restart may have written one twice)."""

    outputs: dict[str, list[RecordedOutput]] = field(default_factory=lambda: defaultdict(list))
    dead_letters: dict[DeadLetterKey, DeadLetter] = field(default_factory=dict)
    unreadable: int = 0

    def add_output(self, record: RecordLike) -> None:
        """Index one record of the warnings, reflection-requests or decisions topic."""
        try:
            output: Any = codec.loads(record.value or b"")
        except EventDecodeError:
            self.unreadable += 1
            return
        kind = output_kind(output) if isinstance(output, dict) else None
        if kind is None or not isinstance(output.get(ID_FIELDS[kind]), str):
            self.unreadable += 1
            return
        position = Position(record.topic, record.partition, record.offset)
        self.outputs[output[ID_FIELDS[kind]]].append(RecordedOutput(kind, output, position))

    def add_dead_letter(self, record: RecordLike, headers: Any) -> None:
        """Index one record of the dead-letter topic by the position of its input."""
        letter = DeadLetter.from_record(record.value or b"", record.key, headers or ())
        source = letter.source
        key = (source.topic, source.partition, source.offset, letter.batch_index or 0)
        self.dead_letters[key] = letter
