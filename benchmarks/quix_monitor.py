"""The action monitor's job on Quix Streams, the peer engine of ``action_monitor.py``.

The same :class:`RecordProcessor` (decode, validate, redact, detect, reflection
levels) runs in a stateful Quix ``apply``: each loop's state lives in Quix's
RocksDB store with its changelog topic, keyed by the record key (the loop id), and
its warnings and reflection requests are produced to the same topics as the
worker's. Single-event records only: a record's state is the state of its key.

Tansu describes only the topic configs set at creation, and Quix reads
``retention.ms``, ``retention.bytes`` and ``cleanup.policy`` of its source topics:
:func:`create_quix_topics` creates them with all three.
"""

from __future__ import annotations

from typing import Any

from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from loopwarden.agents.monitor.declaration import LOOP_STATES
from loopwarden.agents.monitor.records import RecordProcessor
from loopwarden.agents.monitor.state import LoopState
from loopwarden.schemas.dead_letter import SourcePosition
from loopwarden.settings import Settings
from loopwarden.streams.runtime.blas_threads import limit_blas_threads
from loopwarden.streams.runtime.state.protocol import KeyedRecord

QUIX_TOPIC_CONFIG = {
    "cleanup.policy": "delete",
    "retention.ms": "604800000",
    "retention.bytes": "-1",
}


async def create_quix_topics(settings: Settings) -> None:
    """The input and output topics, with the configs Quix reads."""
    topics = settings.topics
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka.bootstrap_servers)
    await admin.start()
    try:
        await admin.create_topics(
            [
                NewTopic(name, topics.partitions, 1, topic_configs=QUIX_TOPIC_CONFIG)
                for name in (topics.actions, topics.warnings, topics.reflection_requests)
            ]
        )
    finally:
        await admin.close()


def serve_quix(settings: Settings) -> None:
    """Run the monitor job on Quix Streams until terminated."""
    from quixstreams import Application, message_context

    kafka, names = settings.kafka, settings.topics
    app = Application(
        broker_address=kafka.bootstrap_servers,
        consumer_group=settings.app_id,
        auto_offset_reset="earliest",
        loglevel="WARNING",
        state_dir=f"{settings.data_dir}/quix-state",
        consumer_extra_config={"fetch.wait.max.ms": kafka.fetch_max_wait_ms},
        producer_extra_config={"linger.ms": kafka.producer_linger_ms},
    )
    actions = app.topic(names.actions, key_deserializer="bytes", value_deserializer="bytes")
    warnings = app.topic(names.warnings, key_serializer="str", value_serializer="json")
    requests = app.topic(names.reflection_requests, key_serializer="str", value_serializer="json")
    limit_blas_threads()  # as the worker runs the sentence encoder
    processor = RecordProcessor.for_settings(settings)
    ttl_s = LOOP_STATES.idle_ttl_s(settings)

    def monitor(
        value: bytes, key: bytes, timestamp: int, headers: Any, state: Any
    ) -> dict[str, list[Any]]:
        context = message_context()
        source = SourcePosition(context.topic, context.partition, context.offset, timestamp)
        stored = state.get("loop")

        def load(loop_id: str) -> LoopState | None:
            return LoopState.restore(loop_id, stored.encode("latin-1")) if stored else None

        view = LOOP_STATES.view(load, ttl_s, context.partition)
        outcome = processor.process(KeyedRecord(value, key, (), source), view)
        for changed in outcome.states.values():
            state.set("loop", changed.snapshot().decode("latin-1"))  # Quix stores JSON
        return {"warnings": outcome.warnings, "requests": outcome.requests}

    outputs = app.dataframe(actions).apply(monitor, stateful=True, metadata=True)
    outputs.apply(lambda out: out["warnings"], expand=True).to_topic(
        warnings, key=lambda warning: warning["loop_id"]
    )
    outputs.apply(lambda out: out["requests"], expand=True).to_topic(
        requests, key=lambda request: request["loop_id"]
    )
    app.run()
