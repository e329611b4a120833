"""The broker watchdog logs once when the broker stops answering and once when it is back."""

from __future__ import annotations

import asyncio
import logging

from loopwarden.streams.runtime.watchdog import BrokerWatchdog


async def test_one_line_down_one_line_back(caplog):
    answers = iter([True, False, False, False, True, True])
    now = iter(range(100, 200, 5))

    async def probe():
        if not next(answers):
            await asyncio.sleep(1)  # never answers in time
        return set()

    dog = BrokerWatchdog(probe, "127.0.0.1:9092", timeout_s=0.01, clock=lambda: next(now))
    with caplog.at_level(logging.WARNING):
        results = [await dog.check() for _ in range(6)]
    assert results == [True, False, False, False, True, True]
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2
    assert "does not answer" in lines[0] and "TimeoutError" in lines[0]
    assert "answers again after 5 s" in lines[1]


async def test_a_broker_that_lost_the_topics_stops_the_worker(caplog):
    topics = iter([{"a", "b"}, {"a", "b"}, {"b"}])
    stopped = []

    async def probe():
        return next(topics)

    async def stop(reason):
        stopped.append(reason)

    dog = BrokerWatchdog(probe, "b:9092", required_topics=frozenset({"a"}), on_topics_lost=stop)
    assert [await dog.check() for _ in range(3)] == [True, True, False]
    assert len(stopped) == 1 and "lost topics this worker reads (a)" in stopped[0]
