"""True end offsets, for brokers that under-report them.

Tansu 0.6 (the embedded broker) answers ListOffsets(latest) with the base offset
+ 1 of a partition's last record batch, not with the offset after its last
record. Faust reads that number to know where table recovery ends, and a
subscriber reads it to start "at the end"; both would stop short of records in
the last batch. :func:`probe_end_offsets` reads forward from the reported end
and returns the offset after the last record that is there now. On Apache Kafka
the probe finds nothing beyond the reported end and changes nothing.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from aiokafka import AIOKafkaConsumer, TopicPartition


async def probe_end_offsets(
    bootstrap_servers: str,
    reported: Mapping[TopicPartition, int],
    *,
    timeout_s: float = 5.0,
    fetch_max_wait_ms: int = 10,
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
    )
    await consumer.start()
    try:
        consumer.assign(list(candidates))
        for tp, end in candidates.items():
            consumer.seek(tp, end - 1)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=100, max_records=10_000)
            if not any(batches.values()):
                break
            for tp, records in batches.items():
                if records:
                    result[tp] = max(result[tp], records[-1].offset + 1)
        return result
    finally:
        await consumer.stop()
