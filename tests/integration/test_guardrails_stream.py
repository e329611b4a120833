"""Guardrails on the stream: completions in, rerun decisions and guardrail warnings out."""

from __future__ import annotations

import uuid

import pytest

from loopwarden.schemas import codec
from loopwarden.schemas.warnings import WarningKind
from loopwarden.streams.client.json_subscribers import DecisionSubscriber
from loopwarden.streams.client.publisher import AsyncPublisher
from loopwarden.streams.client.subscriber import DeadLetterSubscriber, WarningSubscriber

pytestmark = pytest.mark.integration


async def test_a_family_that_never_improves_is_finalized_by_fatigue(shared_settings, shared_worker):
    family = f"fam-{uuid.uuid4().hex[:6]}"
    async with (
        DecisionSubscriber(shared_settings, loop_id=family) as decisions,
        WarningSubscriber(shared_settings, loop_id=f"{family}_r4") as warnings,
    ):
        async with AsyncPublisher(shared_settings) as publisher:
            loop_id = family
            for _ in range(6):
                await publisher.complete_loop(loop_id, 0.5, 0.5, max_reruns=5)
                (decision,) = await decisions.collect(1, 60)
                result = decision["decision_result"]
                if result["decision"] == "finalize":
                    break
                loop_id = result["new_loop_id"]
        (warning,) = await warnings.collect(1, 30)
    assert decision["loop_id"] == f"{family}_r4"
    assert result["finalize_reason"] == "reflection_fatigue"
    assert result["rerun_count"] == 4 and result["max_reruns"] == 5  # before the limit
    assert decision["reflection_result"]["reflection_fatigue"] == 0.6
    assert warning.kind is WarningKind.REFLECTION_FATIGUE
    assert "[GUARDRAIL]" in warning.timeline_message


async def test_a_bias_tag_repeated_across_three_loops_halts(shared_settings, shared_worker):
    family = f"bias-{uuid.uuid4().hex[:6]}"
    tags = [{"tag": "anchoring", "detail": "sticks to the first estimate"}]
    async with DecisionSubscriber(shared_settings, loop_id=family) as decisions:
        async with AsyncPublisher(shared_settings) as publisher:
            for loop_id in (family, f"{family}_r1", f"{family}_r2"):
                await publisher.complete_loop(loop_id, 0.6, 0.2, bias_tags=tags)
        received = await decisions.collect(3, 60)
    assert [d["loop_id"] for d in received] == [family, f"{family}_r1", f"{family}_r2"]
    assert [d["decision_result"]["decision"] for d in received] == ["rerun", "rerun", "finalize"]
    last = received[-1]
    assert last["decision_result"]["action"] == "halt_loop"
    assert last["reflection_result"]["repetition_counts"] == {"anchoring": 3}


async def test_a_completion_not_done_is_dead_lettered(shared_settings, shared_worker):
    family = f"nd-{uuid.uuid4().hex[:6]}"
    bad = codec.dumps(
        {
            "event_id": "nd",
            "type": "loop_complete",
            "loop_id": family,
            "occurred_at": 1.0,
            "payload": {"reflection_status": "running", "alignment_score": 0.5, "drift_score": 0.5},
        }
    )
    async with (
        DeadLetterSubscriber(shared_settings, loop_id=family) as letters,
        DecisionSubscriber(shared_settings, loop_id=family) as decisions,
    ):
        async with AsyncPublisher(shared_settings) as publisher:
            publisher.topic = shared_settings.topics.loop_completions
            await publisher.send_raw(bad, family.encode())
            publisher.topic = shared_settings.topics.actions
            await publisher.complete_loop(family, 0.9, 0.1)  # the worker keeps going
        (letter,) = await letters.collect(1, 60)
        (decision,) = await decisions.collect(1, 60)
    assert letter.reason == "validation"
    assert letter.message == "loop_complete.payload.reflection_status: Input should be 'done'"
    assert letter.source.topic == shared_settings.topics.loop_completions
    assert decision["decision_result"]["finalize_reason"] == "thresholds_met"


async def test_answer_to_says_when_no_worker_answers(broker):
    """Issue 7: the README's guardrails snippet hung forever when it missed the decision;
    now it waits for the answer to its own event, and a missing worker is a clear error."""
    from loopwarden.errors import NothingReceivedError
    from loopwarden.streams.client.json_subscribers import DecisionSubscriber

    from .conftest import create_topics, isolated_settings

    settings = isolated_settings(broker, "no-answer")
    create_topics(settings)  # topics, but no worker
    async with DecisionSubscriber(settings, loop_id="lonely_001") as decisions:
        async with AsyncPublisher(settings) as publisher:
            event_id = await publisher.complete_loop("lonely_001", 0.9, 0.1)
        with pytest.raises(NothingReceivedError, match="is a worker running"):
            await decisions.answer_to(event_id, timeout_s=1.5)
