"""What the workers recorded: warnings, reflection requests, decisions and dead letters,
read back from their topics and indexed for the comparison.

Workers encode an output with the same codec from the same dict, so a recorded
record whose bytes equal a reproduced output's encoding is that output, unchanged:
it is counted without being parsed (parsing every recorded output cost a replay
a third of its time). Everything else is parsed and compared field by field.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
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
    exact: Counter[str] = field(default_factory=Counter)
    """Output id → copies recorded byte for byte as the replay encodes it."""
    dead_letters: dict[DeadLetterKey, DeadLetter] = field(default_factory=dict)
    unreadable: int = 0

    def add_output(self, record: RecordLike, encoded: Mapping[bytes, str] | None = None) -> None:
        """Index one record of the warnings, reflection-requests or decisions topic;
        ``encoded`` maps the replay's encoded outputs to their ids."""
        if encoded is not None and record.value is not None:
            output_id = encoded.get(record.value)
            if output_id is not None:
                self.exact[output_id] += 1
                return
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
