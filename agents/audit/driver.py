"""An audit run: read the input range (and its history), replay it, read what was recorded,
compare. It sits beside the replayer: the pure parts live in the other modules of
:mod:`loopwarden.agents.audit`; this one only moves records from Kafka to them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from loopwarden.agents.audit.compare import AuditContext, AuditReport, compare
from loopwarden.agents.audit.recorded import Recorded
from loopwarden.agents.audit.recorded_settings import stamps_of, with_recorded
from loopwarden.agents.audit.replayer import Replayer
from loopwarden.agents.audit.window import PartitionWindow, Place
from loopwarden.agents.capabilities import replayable
from loopwarden.errors import EventDecodeError
from loopwarden.schemas import codec
from loopwarden.schemas.families import family_of
from loopwarden.schemas.positions import default_partition
from loopwarden.settings import Settings
from loopwarden.streams.client.producer import start_producer
from loopwarden.streams.runtime.capability import Capability
from loopwarden.streams.runtime.outputs import ROUTES
from loopwarden.streams.tools.replay_reader import (
    PartitionSpan,
    TopicRangeReader,
    committed_offsets,
)
from loopwarden.streams.tools.topic_plan import events_topic
from loopwarden.streams.tools.topics import ensure_topic

INPUTS = tuple(dict.fromkeys(c.replay.input for c in replayable() if c.replay is not None))
"""The names ``--input`` takes: each replayable capability's (``actions``, ``completions``)."""
Progress = Callable[[int], None]


@dataclass(slots=True)
class AuditScope:
    """What to replay: inputs, a range (offsets and/or time), one loop or all."""

    inputs: tuple[str, ...] = INPUTS
    loop_id: str | None = None
    offsets: dict[tuple[str, int], tuple[int | None, int | None]] | None = None
    """``{(input, partition): (start, end)}``; only those partitions are read."""
    since_ms: int | None = None
    until_ms: int | None = None
    rebuild: bool = True


@dataclass(slots=True)
class AuditResult:
    """The report plus what the run did, for the notes and the benchmark."""

    report: AuditReport
    replayer: Replayer
    records_read: int = 0
    spans: list[PartitionSpan] = field(default_factory=list)


def _replayed(name: str) -> Capability:
    """The capability whose input ``--input`` calls ``name``."""
    for each in replayable():
        if each.replay is not None and each.replay.input == name:
            return each
    raise ValueError(f"no replayable input named {name!r}; known: {list(INPUTS)}")


def _topic(settings: Settings, name: str) -> str:
    return _replayed(name).inputs(settings.topics)[0]  # the input, not its re-route topic


def audited_outputs() -> list[str]:
    """The named outputs an audit compares: every replayable capability's."""
    names = (n for c in replayable() if c.replay is not None for n in c.replay.audited)
    return list(dict.fromkeys(names))


async def _input_spans(
    reader: TopicRangeReader, settings: Settings, scope: AuditScope
) -> tuple[list[PartitionSpan], dict[tuple[str, int], PartitionWindow], list[str]]:
    spans, windows, notes = [], {}, []
    for name in scope.inputs:
        topic = _topic(settings, name)
        partitions = await reader.partitions(topic)
        if scope.loop_id is not None:
            replay = _replayed(name).replay
            by_family = replay is not None and replay.keyed_by == "family"
            key = family_of(scope.loop_id) if by_family else scope.loop_id
            partitions = [default_partition(key.encode(), len(partitions))]
        if scope.offsets is not None:
            partitions = [p for p in partitions if (name, p) in scope.offsets]
        for partition, (first, end) in (await reader.bounds(topic, partitions)).items():
            start, stop = (scope.offsets or {}).get((name, partition), (None, None))
            window = PartitionWindow(start, stop, scope.since_ms, scope.until_ms)
            windows[(topic, partition)] = window
            read_from = first if scope.rebuild else max(first, start or first)
            spans.append(PartitionSpan(topic, partition, read_from, min(end, stop or end)))
            if scope.rebuild and first > 0:
                notes.append(
                    f"{topic}[{partition}] starts at offset {first} (older records are gone): "
                    "loops that began before it may not be rebuilt fully"
                )
    return spans, windows, notes


async def _output_spans(
    reader: TopicRangeReader, settings: Settings, scope: AuditScope
) -> tuple[list[PartitionSpan], dict[str, int]]:
    """The output partitions to read, and each output topic's partition count."""
    keyed: dict[str, str | None] = {}
    for name in audited_outputs():
        route = ROUTES[name]
        keyed[route.topic(settings.topics)] = (
            route.key_of_loop(scope.loop_id) if scope.loop_id else None
        )
    keyed[settings.topics.dead_letter] = None
    spans, counts = [], {}
    for topic, key in keyed.items():
        partitions = await reader.partitions(topic)
        counts[topic] = len(partitions)
        if key is not None:
            partitions = [default_partition(key.encode(), len(partitions))]
        for partition, (first, end) in (await reader.bounds(topic, partitions)).items():
            spans.append(PartitionSpan(topic, partition, first, end))
    return spans, counts


def _beyond_retention(
    replayer: Replayer,
    settings: Settings,
    outputs: list[PartitionSpan],
    counts: dict[str, int],
    starts: dict[tuple[str, int], int],
) -> frozenset[str]:
    """Reproduced outputs that belong to an output partition whose older records the
    retention deleted, and whose event time is before the first record it still holds
    (the warnings topic keeps 7 days, the actions 30: an audit of old actions)."""
    trimmed = {(s.topic, s.partition) for s in outputs if s.start > 0}
    if not trimmed:
        return frozenset()
    trimmed_topics = {topic for topic, _ in trimmed}
    unseen = []
    for output_id, reproduced in replayer.state.outputs.items():
        route = ROUTES[reproduced.output_name]
        topic = route.topic(settings.topics)
        if topic not in trimmed_topics:
            continue
        partition = default_partition(route.key(reproduced.output, settings), counts[topic])
        if (topic, partition) not in trimmed:
            continue
        first_ms = starts.get((topic, partition))  # None: nothing is left at all
        occurred = reproduced.output.get("occurred_at")
        if first_ms is None or (isinstance(occurred, int | float) and occurred * 1000 < first_ms):
            unseen.append(output_id)
    return frozenset(unseen)


async def run_audit(
    settings: Settings,
    scope: AuditScope,
    progress: Progress | None = None,
    on_spans: Callable[[int], None] | None = None,
    recorded_settings: bool = True,
    adjust: Callable[[Settings], Settings] | None = None,
) -> AuditResult:
    """Replay ``scope`` and compare with the recorded outputs.

    With ``recorded_settings`` the replay decides with the settings the outputs
    record in ``produced_by`` (the deployment's), else with ``settings``; ``adjust``
    (``--set``, ``--config``) applies on top of either. ``on_spans`` is told how many
    offsets will be read (for a progress bar), and ``progress`` how many were read.
    """
    bootstrap = settings.kafka.bootstrap_servers
    recorded = Recorded()
    names = settings.topics
    async with TopicRangeReader(bootstrap, security=settings.kafka.security) as reader:
        spans, windows, notes = await _input_spans(reader, settings, scope)
        outputs, counts = await _output_spans(reader, settings, scope)
        wanted = outputs if recorded_settings else [s for s in outputs if s.topic == names.advice]
        parsed = await _parsed_outputs(reader, wanted, names)
        if recorded_settings:
            settings, adopted = with_recorded(settings, stamps_of(parsed))
            notes = [*notes, *adopted]
        if adjust is not None:
            settings = adjust(settings)
        replayer = Replayer(settings, scope.loop_id, recorded=_by_trigger(parsed))
        if on_spans is not None:
            on_spans(sum(s.size for s in spans) + sum(s.size for s in outputs))
        result = AuditResult(AuditReport(), replayer, spans=spans + outputs)
        async for batch in reader.read(spans):
            for record in batch:
                place = windows[(record.topic, record.partition)].place(
                    record.offset, record.timestamp
                )
                if place is Place.INSIDE:
                    replayer.apply(record, inside=True)
                elif place is Place.BEFORE and scope.rebuild:
                    replayer.apply(record, inside=False)
            result.records_read += len(batch)
            if progress is not None:
                progress(len(batch))
        encoded = replayer.encoded()
        starts: dict[tuple[str, int], int] = {}  # each output partition's first record's time
        async for batch in reader.read(outputs):
            for record in batch:
                starts.setdefault((record.topic, record.partition), record.timestamp)
                if record.topic == names.dead_letter:
                    recorded.add_dead_letter(record, record.headers)
                else:
                    recorded.add_output(record, encoded)
            result.records_read += len(batch)
            if progress is not None:
                progress(len(batch))
    committed = await committed_offsets(
        bootstrap,
        settings.app_id,
        [_topic(settings, n) for n in scope.inputs],
        settings.kafka.security,
    )
    unseen = _beyond_retention(replayer, settings, outputs, counts, starts)
    context = AuditContext(replayer.stamps, committed, rebuilt=scope.rebuild, unseen=unseen)
    result.report = compare(replayer.state, recorded, context)
    result.report.notes[:0] = [*notes, _rebuild_note(replayer, scope)]
    if recorded.unreadable:
        result.report.notes.append(
            f"{recorded.unreadable} record(s) on the output topics were not loopwarden outputs"
        )
    return result


async def _parsed_outputs(reader: TopicRangeReader, outputs: list[Any], names: Any) -> list[Any]:
    """The recorded outputs, parsed (a first pass over the output range, dead letters
    aside): for the settings they record and what a replay's settle step is told."""
    parsed: list[Any] = []
    async for batch in reader.read([s for s in outputs if s.topic != names.dead_letter]):
        for record in batch:
            with contextlib.suppress(EventDecodeError):
                parsed.append(codec.loads(record.value or b""))
    return parsed


def _by_trigger(parsed: list[Any]) -> dict[str, dict[str, Any]]:
    """Recorded advice by the task start it answered (the first copy)."""
    found: dict[str, dict[str, Any]] = {}
    for output in parsed:
        if isinstance(output, dict) and output.get("type") == "advice":
            found.setdefault(str(output.get("task_event_id")), output)
    return found


def _rebuild_note(replayer: Replayer, scope: AuditScope) -> str:
    state = replayer.state
    if not scope.rebuild:
        return "state before the range was not rebuilt (--rebuild none): loops start empty"
    events = len(state.history_event_ids)
    return (
        f"state rebuilt from the start of each partition: {events} event(s) of "
        f"{len(state.history_loops)} loop(s) in {state.history_records} record(s) before the range"
    )


async def emit(settings: Settings, result: AuditResult, topic: str) -> int:
    """Publish the reproduced outputs to ``topic`` (keyed like the workers', created like
    loopwarden's events topics when missing); their count."""
    await ensure_topic(settings, events_topic(settings, topic))
    producer = await start_producer(
        settings.kafka.bootstrap_servers, settings.publisher, settings.kafka.security
    )
    sent = 0
    try:
        for reproduced in result.replayer.state.outputs.values():
            output: Any = reproduced.output
            key = ROUTES[reproduced.output_name].key(output, settings)
            await producer.send(topic, codec.dumps(output), key=key)
            sent += 1
        await producer.flush()
    finally:
        await producer.stop()
    return sent
