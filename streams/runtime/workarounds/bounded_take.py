"""Batches of a Faust stream bounded by records *and* bytes (``Stream.take_events``
with a byte budget).

Faust's ``take_events(max_, within)`` hands over a batch when ``max_`` records are
buffered or ``within`` seconds have passed since the last batch was processed. A
batch is sized in records, but records differ: a memory-writes record holds one
JSON write (about 3 KB with a vector) or an Arrow record of hundreds (512 KB).
Sized for the first, a batch of the second waited the full window after every
batch (0.5 s of idle per 1–2 s of work: a quarter of a bulk load's throughput
here); sized for the second, single writes would be stored a few at a time. Here
a batch is also handed over once ``max_bytes`` of record values are buffered.

Faust's loop also wakes every ``within`` seconds whether or not anything was
buffered: a take gathering for 20 ms woke 50 times a second in an idle worker. Here
an empty buffer waits for its first event, and ``within`` counts from that event: a
batch is handed over at most ``within`` after its first event arrived.

The body follows Faust 0.11's ``Stream.take_events`` (buffering processor, passive
consumption, events acked only after the batch was processed) — it uses the same
stream internals, and ``tests/integration/test_memory_stream.py`` holds it to its
contract (every write of a bulk load applied once, acked only after it was).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncGenerator, Sequence
from typing import Any

from mode.utils.futures import notify


def take_events_bounded(
    stream: Any,
    max_records: int,
    max_bytes: int | None,
    within: float,
    *,
    commit: bool = False,
) -> AsyncGenerator[Sequence[Any], None]:
    """Batches of ``stream``'s events: at most ``max_records``, handed over as soon as
    ``max_records`` or ``max_bytes`` (None: no byte bound) of values are buffered, else
    ``within`` s after the batch's first event.
    With ``commit``, the offsets of a processed batch are committed as soon as it is
    acked instead of at the consumer's next commit interval."""
    byte_bound = sys.maxsize if max_bytes is None else max_bytes
    generator = _take(stream, max_records, byte_bound, within, commit)
    stream._active_agens.add(generator)  # closed with the stream, as Faust's own takes
    return generator


async def _take(
    stream: Any, max_records: int, max_bytes: int, within: float, commit: bool
) -> AsyncGenerator[Sequence[Any], None]:
    events: list[Any] = []
    size = [0]
    full = asyncio.Event()
    arrived = asyncio.Event()  # the buffer holds an event
    consumed = asyncio.Event()
    consuming: asyncio.Future[Any] | None = None
    enable_acks = stream.enable_acks

    async def add_to_buffer(value: Any) -> Any:
        nonlocal consuming
        try:
            if consuming is not None:  # a batch is being processed: wait for it
                try:
                    await consuming
                finally:
                    consuming = None
            event = stream.current_event
            if event is None:
                raise RuntimeError("take buffer found current_event is None")
            events.append(event)
            arrived.set()
            size[0] += len(event.message.value or b"")
            if len(events) >= max_records or size[0] >= max_bytes:
                full.set()
                consumed.clear()
                await stream.wait(consumed)  # no more than one batch buffered
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            stream.log.exception("Error adding to take buffer: %r", exc)
            await stream.crash(exc)
        return value

    stream.enable_acks = False  # events are acked here, after their batch was processed
    stream.add_processor(add_to_buffer)
    stream._enable_passive(aiter(stream.channel))
    try:
        while not stream.should_stop:
            if not events:  # nothing to hand over: no timer, wait for the first event
                await stream.wait_for_stopped(arrived)
                continue
            await stream.wait_for_stopped(full, timeout=within)
            consuming = stream.loop.create_future()
            try:
                yield list(events)
            finally:
                for event in events:
                    await stream.ack(event)
                events.clear()
                arrived.clear()
                size[0] = 0
                notify(consuming)
                full.clear()
                consumed.set()
            if commit:  # the sink is delivered first (see workarounds.consumer)
                await stream.app.consumer.commit()
    finally:
        stream.enable_acks = enable_acks
        stream._processors.remove(add_to_buffer)
