"""The Faust side of the action monitor: decode → monitor → send → store.

The agent reads raw bytes (a typed topic would stop the agent on the first
undecodable value), hands each record to :class:`RecordProcessor`, writes the
touched loop states to the ``loop-state`` table once per record, and sends
warnings, reflection requests and dead letters. Nothing else happens here.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from loopwarden.agents.monitor.expiry import IdleLoopSweeper
from loopwarden.agents.monitor.records import RecordProcessor
from loopwarden.agents.monitor.state import LoopState
from loopwarden.errors import FieldError
from loopwarden.schemas import codec
from loopwarden.schemas.dead_letter import DeadLetter, SourcePosition
from loopwarden.streams.app import LoopwardenApp

log = logging.getLogger(__name__)

STATE_TABLE = "loop-state"


def register_action_monitor(app: LoopwardenApp) -> Any:
    """Declare the topics, the state table and the ``monitor_actions`` agent on ``app``."""
    settings = app.loopwarden
    names = settings.topics

    def raw_topic(name: str) -> Any:
        return app.topic(
            name, key_serializer="raw", value_serializer="raw", partitions=names.partitions
        )

    actions = raw_topic(names.actions)
    warnings = raw_topic(names.warnings)
    requests = raw_topic(names.reflection_requests)
    dead_letters = raw_topic(names.dead_letter)
    states = app.Table(
        STATE_TABLE,
        partitions=names.partitions,
        key_type=bytes,  # bytes → faust's "raw" codec: snapshots are orjson already
        value_type=bytes,
        help="Per-loop monitor state (window, counters, reflections).",
    )
    processor = RecordProcessor(
        settings.detection, settings.limits.max_event_bytes, settings.limits.state_cache_loops
    )
    sweeper = IdleLoopSweeper(
        settings.limits.idle_loop_ttl_s, settings.limits.expiry_sweep_interval_s
    )

    def load_state(loop_id: str) -> LoopState | None:
        data = states.get(loop_id.encode())
        return LoopState.restore(loop_id, data) if data else None

    def peek(key: bytes) -> tuple[int, float] | None:
        data = states.get(key)
        return LoopState.peek_expiry(data) if data else None

    async def send_dead_letter(letter: DeadLetter) -> None:
        await dead_letters.send(key=letter.key, value=letter.value, headers=letter.headers())

    async def forget_cached_states(*args: Any, **kwargs: Any) -> None:
        processor.forget()  # the table may be recovered or handed over: re-read it

    app.on_partitions_revoked.connect(forget_cached_states)
    app.on_partitions_assigned.connect(forget_cached_states)

    @app.agent(actions, name="monitor_actions")
    async def monitor_actions(stream: Any) -> None:
        async for event in stream.events():
            message = event.message
            source = SourcePosition(
                message.topic,
                message.partition,
                message.offset,
                int(message.timestamp * 1000) if message.timestamp else None,
            )
            try:
                outcome = processor.process(message.value, message.key, source, load_state)
            except Exception as exc:  # a bug must not stop the worker or lose the record
                log.exception(
                    "processing failed at %s[%d]@%d", source.topic, source.partition, source.offset
                )
                error = FieldError("", f"{type(exc).__name__}: {exc}")
                await send_dead_letter(
                    DeadLetter(
                        "processing_error",
                        str(error),
                        message.value or b"",
                        source,
                        message.key,
                        (error,),
                    )
                )
                continue
            for loop_id, state in outcome.states.items():
                key = loop_id.encode()
                states[key] = state.snapshot()
                sweeper.touch(key, state.partition, state.last_seen)
            for letter in outcome.dead_letters:
                log.warning(
                    "dead letter (%s) at %s[%d]@%d: %s",
                    letter.reason,
                    source.topic,
                    source.partition,
                    source.offset,
                    letter.message,
                )
                await send_dead_letter(letter)
            for warning in outcome.warnings:
                await warnings.send(key=warning["loop_id"].encode(), value=codec.dumps(warning))
            for request in outcome.requests:
                await requests.send(key=request["loop_id"].encode(), value=codec.dumps(request))
            if sweeper.due(source.partition, time.monotonic()):
                for key in sweeper.expired(source.partition, list(states.keys()), peek):
                    del states[key]
                    processor.evict(key.decode())

    return monitor_actions
