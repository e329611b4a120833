"""How ``detect`` and ``publish`` read their input: one way, the same words for both.

- **JSON lines**, each read exactly as the worker reads a record
  (:func:`~loopwarden.schemas.records.decode_record`): one event or an array of events,
  each within ``limits.max_event_bytes``, in the full or the flat form, validated and
  redacted. What cannot be used is named per line (``line N[i]: reason: message``).
- **One JSON document** (a pretty-printed array, or one object over several lines) is
  recognised by its first line (a lone ``[`` or ``{``) and read whole, with a note.
- A UTF-8 byte-order mark before the first line is dropped.
- A field the schema does not know (``succes``) is reported with the closest known
  name and ignored: the wire format stays lenient, but a typo that drops a failure
  should not pass in silence.
- Reading standard input from a terminal says so (and how to end it).
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

import click

from loopwarden.schemas.events import ENVELOPE_FIELDS
from loopwarden.schemas.flat_events import envelope_from_json

if TYPE_CHECKING:
    from loopwarden.errors import FieldError
    from loopwarden.schemas.dead_letter import DeadLetter
    from loopwarden.schemas.events import ActionEvent

BOM = b"\xef\xbb\xbf"
DOCUMENT_OPENERS = (b"[", b"{")


@dataclass(slots=True)
class LineEvents:
    """The events of one line, what was refused, and what was ignored."""

    events: list[ActionEvent] = field(default_factory=list)
    refused: list[DeadLetter] = field(default_factory=list)
    ignored: list[FieldError] = field(default_factory=list)
    """Fields the schema does not know, each with the closest known name."""


def input_lines(source: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    """(line number, line) of every non-blank line; a JSON document spread over lines
    comes as one line (number 1), a byte-order mark is dropped."""
    name = getattr(source, "name", "-")
    if name == "<stdin>" and sys.stdin.isatty():
        click.echo(
            "reading JSON lines from standard input (Ctrl-D ends it; give a FILE to read one)",
            err=True,
        )
    first = True
    for line_no, raw in enumerate(source, 1):
        line = raw.strip()
        if first and line.startswith(BOM):
            line = line[len(BOM) :].strip()
        if not line:
            continue
        if first and line in DOCUMENT_OPENERS:
            document = line + source.read()
            click.echo(
                "this is one JSON document, not JSON lines: reading it whole "
                "(an array is read as its events)",
                err=True,
            )
            yield line_no, document.strip()
            return
        first = False
        yield line_no, line


def line_events(
    line: bytes,
    line_no: int,
    max_event_bytes: int,
    default_time: float | None = None,
    id_prefix: str = "line",
) -> LineEvents:
    """One line read exactly as the worker reads a record (module docstring)."""
    from loopwarden.schemas.dead_letter import SourcePosition
    from loopwarden.schemas.events import ActionPayload, validate_action
    from loopwarden.schemas.records import decode_record

    out = LineEvents()
    elements = itertools.count()

    def validate(obj: Any) -> ActionEvent:
        index = next(elements)
        envelope = envelope_from_json(obj, line_no, default_time, id_prefix, index)
        if isinstance(envelope, dict):
            out.ignored += _unknown(envelope, ActionPayload, index)
        return validate_action(envelope)

    source = SourcePosition("line", 0, line_no)
    decoded = decode_record(line, None, source, max_event_bytes, validate)
    out.events = [event for _, event in decoded.events]
    out.refused = decoded.dead_letters
    return out


def _unknown(envelope: dict[str, Any], payload_model: Any, index: int) -> list[FieldError]:
    from loopwarden.errors import FieldError
    from loopwarden.schemas.known_fields import unknown_fields

    where = f"[{index}]." if index else ""
    found = [
        FieldError(where + error.path, error.message)
        for error in unknown_fields(envelope, known=ENVELOPE_FIELDS, path="")
    ]
    payload = envelope.get("payload")
    if isinstance(payload, dict):
        found += [
            FieldError(where + error.path, error.message)
            for error in unknown_fields(payload, known=payload_model.model_fields)
        ]
    return found


def line_error(line_no: int, letter: DeadLetter) -> str:
    """How ``detect`` and ``publish`` report a line (or an array element) they refuse."""
    where = f"line {line_no}"
    if letter.batch_index is not None:
        where += f"[{letter.batch_index}]"
    return f"{where}: {letter.reason}: {letter.message}"


def report(line_no: int, read: LineEvents) -> int:
    """Print what a line refused and ignored; the number of refusals."""
    for error in read.ignored:
        click.echo(f"line {line_no}: ignored {error.path}: {error.message}", err=True)
    for letter in read.refused:
        click.echo(line_error(line_no, letter), err=True)
    return len(read.refused)
