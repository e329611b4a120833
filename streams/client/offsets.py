"""True end offsets, for brokers that under-report them.

Tansu 0.6 (the embedded broker) answers ListOffsets(latest) with the base offset
+ 1 of a partition's last record batch, not with the offset after its last
record. Faust reads that number to know where table recovery ends, and a
subscriber reads it to start "at the end"; both would stop short of records in
the last batch. :func:`probe_end_offsets` reads the batch that holds the
reported end's record and returns the offset after its last record. On Apache
Kafka that batch ends at the reported end and the probe changes nothing.

The probe waits until every partition has answered (an empty poll says nothing:
a loaded broker answers a fetch in hundreds of milliseconds); it gave up after
one empty 100 ms poll once, and a recovering worker then restored states from
an older snapshot than the one its committed offsets assumed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping

from aiokafka import AIOKafkaConsumer, TopicPartition

from loopwarden.settings.kafka_security import KafkaSecurity
from loopwarden.streams.client.security import client_options

log = logging.getLogger(__name__)


async def probe_end_offsets(
    bootstrap_servers: str,
    reported: Mapping[TopicPartition, int],
    *,
    timeout_s: float = 60.0,
    fetch_max_wait_ms: int = 10,
    security: KafkaSecurity | None = None,
) -> dict[TopicPartition, int]:
    """Correct ``reported`` end offsets by reading what follows them."""
    result = dict(reported)
    candidates = {tp: end for tp, end in reported.items() if end > 0}
    if not candidates:
        return result
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap_servers,
        enable_auto_commit=False,
        fetch_max_wait_ms=fetch_max_wait_ms,
        auto_offset_reset="latest",
        **client_options(security or KafkaSecurity()),
    )
    await consumer.start()
    try:
        consumer.assign(list(candidates))
        for tp, end in candidates.items():
            consumer.seek(tp, end - 1)
        waiting = set(candidates)
        deadline = time.monotonic() + timeout_s
        while waiting and time.monotonic() < deadline:
            batches = await consumer.getmany(*waiting, timeout_ms=500, max_records=10_000)
            for tp, records in batches.items():
                if records:
                    result[tp] = max(result[tp], records[-1].offset + 1)
            for tp in list(waiting):
                # past the reported end's record (also when it was a skipped control record)
                if await consumer.position(tp) >= candidates[tp]:
                    waiting.discard(tp)
        while True:  # the rest of a batch larger than one poll is already buffered
            batches = await consumer.getmany(timeout_ms=0, max_records=10_000)
            if not any(batches.values()):
                break
            for tp, records in batches.items():
                if records:
                    result[tp] = max(result[tp], records[-1].offset + 1)
        if waiting:
            log.warning(
                "end offsets of %s not confirmed within %.0f s; using the reported ones",
                sorted(f"{tp.topic}[{tp.partition}]" for tp in waiting),
                timeout_s,
            )
        return result
    finally:
        await consumer.stop()
