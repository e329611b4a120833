"""``loopwarden detect``: the worker's detectors over a file of events, no broker.

Warnings are printed for people (``--format text``, the default on a terminal: a
header line and the message the agent reads) or as JSON lines for tools
(``--format json``, the default when the output is piped). A warning's provenance
stamp carries every setting that decided it (``produced_by.settings``, 2–3 KB); a run
uses one set of settings, so in JSON the warnings keep the stamp's fingerprint and
the settings are printed with ``--settings-stamp`` only.
"""

from __future__ import annotations

import sys
import time
from typing import IO, TYPE_CHECKING, Any

import click

from loopwarden.cli.exits import Exit

if TYPE_CHECKING:
    from loopwarden.agents.monitor.records import RecordProcessor
    from loopwarden.agents.monitor.state import LoopState
    from loopwarden.cli.json_input import LineEvents
    from loopwarden.streams.runtime.state.offline import OfflineStates


@click.command()
@click.argument("source", type=click.File("rb"), default="-")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default=None,
    help="text for people, JSON lines for tools [default: text on a terminal, else json].",
)
@click.option(
    "--requests/--no-requests",
    default=False,
    help="Also print reflection requests.",
)
@click.option(
    "--settings-stamp",
    is_flag=True,
    help="JSON: keep every setting in each output's produced_by (default: its "
    "component, logic version and fingerprint only).",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Progress bar on stderr (default: when reading a file on a terminal).",
)
def detect(
    source: IO[bytes],
    fmt: str | None,
    requests: bool,
    settings_stamp: bool,
    progress: bool | None,
) -> None:
    """Run the detectors offline over action events in JSON lines (FILE or -).

    No broker is involved: the very same code as the worker runs over the file, one
    loop state per loop id. Lines use the formats of `loopwarden publish`; bad lines
    are reported on stderr and the exit code is then 4.
    """
    from loopwarden.agents.capabilities import capability
    from loopwarden.agents.monitor.declaration import LOOP_STATES
    from loopwarden.agents.spin.meaning import allow_word_fallback
    from loopwarden.cli.json_input import input_lines, report
    from loopwarden.settings import Settings
    from loopwarden.streams.runtime.state.offline import OfflineStates

    if allow_word_fallback():
        click.echo(
            "detect: restated messages are compared by their words, not their meaning: "
            "the worker's sentence encoder is not installed (pip install 'loopwarden[worker]')",
            err=True,
        )
    replay = capability("monitor").replay
    assert replay is not None  # the monitor is replayable
    processor: RecordProcessor = replay.build(Settings())  # the worker's processor
    states = OfflineStates.for_settings(LOOP_STATES, Settings())  # the worker's TTL
    # an event without a time is stamped at the run's start plus its line number in
    # seconds: time windows see one second a line, and outputs carry a date of today
    started = float(int(time.time()))
    name = getattr(source, "name", "-")
    show = progress if progress is not None else (name != "<stdin>" and sys.stderr.isatty())
    fmt = fmt or ("text" if sys.stdout.isatty() else "json")
    counts = {"events": 0, "warnings": 0, "bad": 0, "duplicates": 0}
    out = sys.stdout.buffer

    def emit(output: dict[str, Any]) -> None:
        out.write(_render(output, fmt, settings_stamp))

    with click.progressbar(
        length=_size(source), label="detect", file=sys.stderr, hidden=not show
    ) as bar:
        for line_no, line in input_lines(source):
            bar.update(len(line) + 1)
            read = _detect_line(
                processor, states, line_no, line, emit, requests, counts, started + line_no
            )
            counts["bad"] += report(line_no, read)
    out.flush()
    duplicates = counts["duplicates"]
    skipped = f", {duplicates} skipped: id already applied in its loop" if duplicates else ""
    stamp = processor.stamp
    click.echo(
        f"{counts['events']} event(s), {len(states)} loop(s), {counts['warnings']} "
        f"warning(s), {counts['bad']} bad line(s){skipped}; settings "
        f"{stamp['fingerprint']} ({stamp['component']} logic v{stamp['logic_version']})",
        err=True,
    )
    if counts["bad"]:
        raise click.exceptions.Exit(Exit.BAD_INPUT)


def _render(output: dict[str, Any], fmt: str, settings_stamp: bool) -> bytes:
    from loopwarden.readable import format_warning
    from loopwarden.schemas import codec
    from loopwarden.schemas.warnings import LoopWarning

    if fmt == "json":
        stamp = output.get("produced_by")
        if not settings_stamp and isinstance(stamp, dict):
            output = {**output, "produced_by": {**stamp, "settings": {}}}
        return codec.dumps_line(output)
    if "warning_id" in output:
        return format_warning(LoopWarning.model_validate(output)).encode()
    return (
        f"[{output.get('loop_id')}] reflection request: {output.get('kind')} "
        f"(level {output.get('level')}, trigger {output.get('trigger_event_id')})\n"
    ).encode()


def _detect_line(
    processor: RecordProcessor,
    states: OfflineStates[LoopState],
    line_no: int,
    line: bytes,
    emit: Any,
    requests: bool,
    counts: dict[str, int],
    default_time: float,
) -> LineEvents:
    from loopwarden.cli.json_input import line_events
    from loopwarden.schemas import codec
    from loopwarden.schemas.dead_letter import SourcePosition
    from loopwarden.streams.client.event_builder import event_json

    read = line_events(line, line_no, processor.max_event_bytes, default_time)  # as publish
    if not read.events:
        return read
    events = [event_json(event) for event in read.events]
    record = codec.dumps(events[0] if len(events) == 1 else events)
    # the worker's own processing of the line's events, as one record
    outcome = states.apply(processor, record, None, SourcePosition("file", 0, line_no))
    counts["events"] += outcome.events
    counts["warnings"] += len(outcome.warnings)
    counts["duplicates"] += len(outcome.duplicates)
    for warning in outcome.warnings:
        emit(warning)
    if requests:
        for request in outcome.requests:
            emit(request)
    return read


def _size(source: IO[bytes]) -> int:
    try:
        return max(int(source.seek(0, 2)), 1) if source.seekable() else 1
    finally:
        if source.seekable():
            source.seek(0)
