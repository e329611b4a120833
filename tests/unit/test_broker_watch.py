"""``tail``'s broker watch: what it says when the broker stops and starts answering."""

from __future__ import annotations

import asyncio

import pytest

from loopwarden.cli.broker_watch import BrokerWatch
from loopwarden.errors import BrokerUnavailableError


class Broker:
    """A probe whose answer the test decides, and a clock it moves."""

    def __init__(self) -> None:
        self.up = True
        self.hangs = False
        self.now = 100.0

    async def probe(self) -> None:
        if self.hangs:
            await asyncio.Event().wait()
        if not self.up:
            raise ConnectionRefusedError("Connect call failed ('127.0.0.1', 9092)")


def watch(broker: Broker, give_up_s: float) -> tuple[BrokerWatch, list[str]]:
    said: list[str] = []
    return BrokerWatch(
        broker.probe, "127.0.0.1:9092", give_up_s, said.append, lambda: broker.now, 0.05
    ), said


async def test_it_says_once_that_the_broker_is_lost_then_that_it_is_back():
    broker = Broker()
    w, said = watch(broker, 60)
    await w.check()
    assert said == []
    broker.up = False
    await w.check()
    broker.now += 10
    await w.check()  # still down: nothing more to say before the bound
    assert said == [
        "lost the broker at 127.0.0.1:9092 (Connect call failed ('127.0.0.1', 9092)); "
        "retrying, giving up after 60 s (--give-up-after)"
    ]
    broker.up, broker.now = True, broker.now + 5
    await w.check()
    assert said[1] == "the broker at 127.0.0.1:9092 answers again after 15 s; following on"
    assert w.down_since is None


async def test_it_gives_up_after_the_bound_with_the_broker_error():
    broker = Broker()
    w, _ = watch(broker, 30)
    broker.hangs = True  # accepts and never answers: a timeout
    await w.check()
    broker.now += 29
    await w.check()
    broker.now += 1
    with pytest.raises(BrokerUnavailableError, match=r"has not answered for 30 s: giving up"):
        await w.check()


async def test_zero_retries_forever():
    broker = Broker()
    w, said = watch(broker, 0)
    broker.up = False
    for _ in range(3):
        await w.check()
        broker.now += 3600
    assert said == [
        "lost the broker at 127.0.0.1:9092 (Connect call failed ('127.0.0.1', 9092)); "
        "retrying, never giving up (--give-up-after)"
    ]


@pytest.mark.parametrize(("give_up_s", "interval_s"), [(0, 5.0), (60, 5.0), (8, 2.0), (1, 0.5)])
def test_a_short_bound_is_probed_more_often(give_up_s, interval_s):
    assert watch(Broker(), give_up_s)[0].interval_s == interval_s
