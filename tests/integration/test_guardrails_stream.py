"""The guardrails' answer on the stream as a client waits for it (the decisions
themselves are tested in memory: tests/unit/test_guardrails_stream.py)."""

from __future__ import annotations

import pytest

from loopwarden.streams.client.json_subscribers import DecisionSubscriber
from loopwarden.streams.client.publisher import AsyncPublisher

pytestmark = pytest.mark.integration


async def test_answer_to_says_when_no_worker_answers(broker):
    """Issue 7: the README's guardrails snippet hung forever when it missed the decision;
    now it waits for the answer to its own event, and a missing worker is a clear error."""
    from loopwarden.errors import NothingReceivedError

    from .conftest import create_topics, isolated_settings

    settings = isolated_settings(broker, "no-answer")
    create_topics(settings)  # topics, but no worker
    async with DecisionSubscriber(settings, loop_id="lonely_001") as decisions:
        async with AsyncPublisher(settings) as publisher:
            event_id = await publisher.complete_loop("lonely_001", 0.9, 0.1)
        with pytest.raises(NothingReceivedError, match="is a worker running"):
            await decisions.answer_to(event_id, timeout_s=1.5)
