"""Bad input goes to the dead-letter topic with a reason; the worker keeps going."""

from __future__ import annotations

import uuid

import pytest

from loopwarden.schemas import codec
from loopwarden.streams.client.publisher import AsyncPublisher
from loopwarden.streams.client.subscriber import DeadLetterSubscriber, WarningSubscriber

pytestmark = pytest.mark.integration


async def test_malformed_invalid_and_oversized_events_are_dead_lettered(
    shared_settings, shared_worker
):
    loop_id = f"after-bad-{uuid.uuid4().hex[:6]}"
    key = f"bad-{uuid.uuid4().hex[:6]}"
    oversized = codec.dumps(
        {
            "event_id": "big",
            "loop_id": "x",
            "occurred_at": 1,
            "payload": {"action_type": "a", "params": {"blob": "x" * 5000}},
        }
    )
    bad_inputs = {
        "decode": b"{this is not json",
        "validation": codec.dumps(
            {"event_id": "v", "loop_id": "x", "occurred_at": 1, "payload": {"params": {}}}
        ),
        "too_large": oversized,
    }
    async with (
        DeadLetterSubscriber(shared_settings, loop_id=key) as letters,
        WarningSubscriber(shared_settings, loop_id=loop_id) as warnings,
    ):
        async with AsyncPublisher(shared_settings) as publisher:
            positions = {
                reason: await publisher.send_raw(value, key.encode())
                for reason, value in bad_inputs.items()
            }
            for _ in range(3):
                await publisher.publish(loop_id, "search")
        received = await letters.collect(3, 60)
        spin = await warnings.collect(1, 60)

    by_reason = {letter.reason: letter for letter in received}
    assert set(by_reason) == set(bad_inputs)
    for reason, letter in by_reason.items():
        assert letter.value == bad_inputs[reason]  # the original bytes, unchanged
        assert letter.key == key.encode()
        assert (letter.source.partition, letter.source.offset) == positions[reason]
        assert letter.source.topic == shared_settings.topics.actions
    assert by_reason["validation"].message == "payload.action_type: Field required"
    assert "limits.max_event_bytes is 4096" in by_reason["too_large"].message
    assert by_reason["decode"].message.startswith("not valid JSON")
    # the worker is still processing
    assert spin and spin[0].consecutive_count == 3
    assert shared_worker.process.poll() is None


async def test_a_bad_element_in_a_batch_is_dead_lettered_alone(shared_settings, shared_worker):
    loop_id = f"batch-{uuid.uuid4().hex[:6]}"
    good = [
        {
            "event_id": f"{loop_id}-{i}",
            "loop_id": loop_id,
            "occurred_at": 10 + i,
            "payload": {"action_type": "same"},
        }
        for i in range(3)
    ]
    batch = codec.dumps([good[0], {"event_id": "broken", "loop_id": loop_id}, *good[1:]])
    async with (
        DeadLetterSubscriber(shared_settings, loop_id=loop_id) as letters,
        WarningSubscriber(shared_settings, loop_id=loop_id) as warnings,
    ):
        async with AsyncPublisher(shared_settings) as publisher:
            await publisher.send_raw(batch, loop_id.encode())
        (letter,) = await letters.collect(1, 60)
        (warning,) = await warnings.collect(1, 60)
    assert letter.batch_index == 1
    assert codec.loads(letter.value) == {"event_id": "broken", "loop_id": loop_id}
    assert warning.event_ids == [e["event_id"] for e in good]
