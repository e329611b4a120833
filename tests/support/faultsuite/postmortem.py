"""Where a crash run's events went: the broker, the worker's stored states, or neither.

An output lost by the crash scenario has three possible causes, and each leaves a
different trace:

- the event never reached the broker: the actions topic holds fewer of the loop's
  events than were published (``not_in_topic``);
- the worker never applied it: the loop's last stored state (its changelog
  record) counts fewer applied events than the topic holds (``not_applied``; more
  would be an event applied twice);
- the state has it, and an output was still lost on the way out.

The second check also catches a state that skipped an event whose outputs happened
to come out the same, which the outputs alone do not show. With
``LOOPWARDEN_FAULTS_LOGS`` set, a failed run also keeps every record of the topics
that say where each event went (:func:`dump_topics`), next to the workers' logs.
"""

from __future__ import annotations

import base64
import gzip
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from faultsuite.harness import read_records
from loopwarden.schemas import codec

SHOWN = 10
"""Loops named per kind of gap (the counts cover them all)."""


@dataclass
class StateGaps:
    """Loops whose events did not all reach the topic, or their stored state."""

    not_in_topic: dict[str, int] = field(default_factory=dict)
    """Loop → published events the topic does not hold."""
    not_applied: dict[str, str] = field(default_factory=dict)
    """Loop → "applied N of M": its stored state against the topic's events."""
    loops_not_in_topic: int = 0
    loops_not_applied: int = 0


def events_by_loop(values: Iterable[bytes | None]) -> dict[str, set[str]]:
    """The event ids of each loop in the values of an actions topic (an event, or a
    batch of events, per record)."""
    found: dict[str, set[str]] = {}
    for value in values:
        if not value:
            continue
        decoded = codec.loads(value)
        for event in decoded if isinstance(decoded, list) else [decoded]:
            found.setdefault(event["loop_id"], set()).add(event["event_id"])
    return found


def applied_by_loop(changelog: Iterable[tuple[bytes | None, bytes | None]]) -> dict[str, int]:
    """Each loop's applied-event count in its last stored state (changelog records in
    order; a tombstone forgets the loop)."""
    applied: dict[str, int] = {}
    for key, value in changelog:
        if key is None:
            continue
        loop = key.decode()
        if value is None:
            applied.pop(loop, None)
        else:
            applied[loop] = int(codec.loads_state(value)["seq"])
    return applied


def state_gaps(
    published: Mapping[str, set[str]],
    in_topic: Mapping[str, set[str]],
    applied: Mapping[str, int],
) -> StateGaps:
    """Compare what was published, what the topic holds and what the stored states
    applied, loop by loop."""
    gaps = StateGaps()
    for loop in sorted(published):
        missing = len(published[loop] - in_topic.get(loop, set()))
        if missing:
            gaps.loops_not_in_topic += 1
            if len(gaps.not_in_topic) < SHOWN:
                gaps.not_in_topic[loop] = missing
    for loop in sorted(in_topic):
        held, done = len(in_topic[loop]), applied.get(loop, 0)
        if done != held:
            gaps.loops_not_applied += 1
            if len(gaps.not_applied) < SHOWN:
                gaps.not_applied[loop] = f"applied {done} of {held}"
    return gaps


async def dump_topics(bootstrap: str, topics: Iterable[str], path: Path) -> int:
    """Write every record of ``topics`` to ``path`` (gzipped JSON lines: topic,
    partition, offset, timestamp, key and value in base64, headers); returns the count."""
    written = 0
    with gzip.open(path, "wb") as out:
        for topic in topics:
            for r in await read_records(bootstrap, topic):
                line = {
                    "topic": r.topic,
                    "partition": r.partition,
                    "offset": r.offset,
                    "timestamp": r.timestamp,
                    "key": _b64(r.key),
                    "value": _b64(r.value),
                    "headers": [[k, _b64(v)] for k, v in r.headers or ()],
                }
                out.write(orjson.dumps(line) + b"\n")
                written += 1
    return written


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()
