"""A busy loop's state reaches the table's changelog once per offset commit, not once
per message: the worker keeps it until the commit, and the commit never passes it."""

from __future__ import annotations

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from loopwarden.agents.monitor.declaration import LOOP_STATES
from loopwarden.agents.monitor.state import LoopState
from loopwarden.schemas.positions import default_partition
from loopwarden.schemas.warnings import WarningKind
from loopwarden.streams.client.publisher import AsyncPublisher
from loopwarden.streams.client.subscriber import WarningSubscriber
from loopwarden.streams.tools.replay_reader import wait_until_committed

from .conftest import isolated_settings

pytestmark = pytest.mark.integration

FAILURES = 20


async def _changelog_records(settings, key: bytes) -> list[bytes | None]:
    """Every changelog record of ``key`` (its partition read to its end)."""
    topic = f"{settings.app_id}-{LOOP_STATES.table}-changelog"
    tp = TopicPartition(topic, default_partition(key, settings.topics.partitions))
    reader = AIOKafkaConsumer(  # earliest: the seek below races a 'latest' reset otherwise
        bootstrap_servers=settings.kafka.bootstrap_servers,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    await reader.start()
    try:
        reader.assign([tp])
        end = (await reader.end_offsets([tp]))[tp]
        await reader.seek_to_beginning(tp)
        values: list[bytes | None] = []
        while await reader.position(tp) < end:
            batches = await reader.getmany(tp, timeout_ms=1000)
            values.extend(r.value for r in batches.get(tp, []) if r.key == key)
        return values
    finally:
        await reader.stop()


async def test_a_loop_changed_by_every_message_is_written_once_per_commit(broker, worker_factory):
    settings = isolated_settings(broker, "state-writes", roles=["monitor"])
    loop_id = "busy-loop"
    worker = worker_factory(settings)
    async with (
        WarningSubscriber(settings, from_beginning=True) as warnings,
        AsyncPublisher(settings, batching=False) as publisher,
    ):
        for n in range(FAILURES):  # a message each (sent after the last warning), no streak
            await publisher.publish(loop_id, f"tool-{n}", success=False, error_message=f"exit {n}")
            await publisher.flush()
            got = await warnings.collect(1, 60)
            assert [w.kind for w in got] == [WarningKind.ACTION_FAILED], worker.log()[-3000:]
    await wait_until_committed(
        settings.kafka.bootstrap_servers, settings.app_id, [settings.topics.actions], 60
    )

    written = await _changelog_records(settings, loop_id.encode())
    assert 1 <= len(written) < FAILURES / 2, len(written)  # per commit, not per message
    latest = LoopState.restore(loop_id, written[-1])
    assert latest.seq == FAILURES  # what is committed is durable
    assert worker.stop() == 0
