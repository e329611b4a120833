"""The Faust side of memory: memory writes in micro-batches → LanceDB → outcomes.

Writes are keyed by scope, so one worker applies a scope's writes in order (the
de-duplication and conflict checks see every earlier write of the scope).
Batches of up to ``memory.batch_max_writes`` or ``memory.batch_within_s`` go to
LanceDB at once, in a thread so the stream keeps flowing. Outcomes (stored,
duplicate, stored_with_conflicts, already_stored, rejected) go to the
memory-outcomes topic; undecodable writes to the dead-letter topic.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from loopwarden.agents.memory.maintenance import Maintenance
from loopwarden.agents.memory.service import MemoryService
from loopwarden.errors import EventError
from loopwarden.schemas import codec
from loopwarden.schemas.dead_letter import DeadLetter
from loopwarden.schemas.ids import derived_id
from loopwarden.schemas.memory import MemoryWrite, validate_memory_write
from loopwarden.streams.app import LoopwardenApp
from loopwarden.streams.dead_letters import send_dead_letter, source_of

log = logging.getLogger(__name__)


def rejected(write: MemoryWrite, exc: BaseException) -> dict[str, Any]:
    """The outcome of a write that could not be applied (the reason is readable)."""
    return {
        "outcome_id": derived_id("memory_outcome", write.event_id),
        "event_id": write.event_id,
        "scope": write.payload.scope,
        "status": "rejected",
        "reason": f"{type(exc).__name__}: {exc}",
    }


def register_memory(app: LoopwardenApp, service: MemoryService) -> None:
    """Declare the memory topics and the ``store_memories`` agent."""
    settings = app.loopwarden
    names = settings.topics
    writes_topic = app.raw_topic(names.memory_writes)
    app.raw_topic(names.memory_outcomes)
    sink = app.sink
    cfg = settings.memory

    def apply(writes: list[MemoryWrite]) -> list[dict[str, Any]]:
        with service.lock:
            return service.writer.write(writes, time.time())

    def maintain() -> dict[str, Any]:
        with service.lock:
            report = Maintenance(service.table, cfg).run(time.time())
        return {
            "type": "maintenance_report",
            "scope": "*",
            "at": time.time(),
            **report.to_json_dict(),
        }

    if cfg.maintenance_interval_s:

        @app.timer(cfg.maintenance_interval_s, on_leader=True, name="maintain_memories")
        async def maintain_memories() -> None:
            report = await asyncio.to_thread(maintain)
            log.info("memory maintenance: %s", report)
            sink.add(names.memory_outcomes, b"*", codec.dumps(report))

    @app.agent(writes_topic, name="store_memories")
    async def store_memories(stream: Any) -> None:
        async for events in stream.take_events(cfg.batch_max_writes, within=cfg.batch_within_s):
            writes: list[MemoryWrite] = []
            for event in events:
                message = event.message
                try:
                    writes.append(validate_memory_write(codec.loads(message.value)))
                except EventError as exc:
                    letter = DeadLetter.from_error(
                        exc, message.value or b"", source_of(message), message.key
                    )
                    send_dead_letter(sink, names.dead_letter, letter)
            if not writes:
                continue
            try:
                outcomes = await asyncio.to_thread(apply, writes)
            except Exception:  # one bad write must not sink the batch: retry one by one
                log.exception("memory batch failed; applying its writes one by one")
                outcomes = []
                for write in writes:
                    try:
                        outcomes.extend(await asyncio.to_thread(apply, [write]))
                    except Exception as exc:
                        outcomes.append(rejected(write, exc))
            for outcome in outcomes:
                outcome.setdefault("type", "memory_outcome")
                sink.add(names.memory_outcomes, outcome["scope"].encode(), codec.dumps(outcome))
