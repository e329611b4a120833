"""A broker that comes back without its data: the worker says so and exits (so that its
supervisor restarts it and the restart recreates the topics), instead of staying alive
and doing nothing."""

from __future__ import annotations

import os
import subprocess
import sys

import orjson
import pytest
from faultsuite.harness import wait_ready

from loopwarden.agents.capabilities import CAPABILITIES
from loopwarden.schemas import codec
from loopwarden.schemas.warnings import LoopWarning
from loopwarden.settings import settings_env
from loopwarden.streams.client.publisher import AsyncPublisher
from loopwarden.streams.tools.broker import EmbeddedBroker
from loopwarden.streams.tools.topics import ensure_topics

from .conftest import isolated_settings

pytestmark = pytest.mark.integration


async def test_a_worker_exits_when_its_broker_lost_the_topics(tmp_path, worker_factory):
    first = EmbeddedBroker(log_path=tmp_path / "first.log").start()
    second = None
    try:
        settings = isolated_settings(first, "lost", ["monitor"])
        worker = worker_factory(settings)
        await wait_ready(settings)
        first.stop()
        second = EmbeddedBroker(port=first.port, log_path=tmp_path / "second.log").start()
        try:
            code = worker.process.wait(90)
        except subprocess.TimeoutExpired:
            code = None
        assert code not in (None, 0), worker.log()[-3000:]
        assert "lost topics this worker reads" in worker.log()
    finally:
        first.stop()
        if second is not None:
            second.stop()


async def test_tail_says_it_lost_the_broker_and_gives_up_with_exit_3(tmp_path):
    """Issue 47, item 7: ``tail`` was silent forever when the broker died mid-stream.
    It follows one warning (so it is connected), the broker stops, and it says so on
    stderr, retries, and exits 3 after ``--give-up-after``."""
    broker = EmbeddedBroker(log_path=tmp_path / "broker.log").start()
    tail = None
    try:
        settings = isolated_settings(broker, "tail-lost")
        await ensure_topics(settings, CAPABILITIES)
        warning = LoopWarning(
            warning_id="w-tail-lost",
            kind="repeated_outcome",
            loop_id="tail-lost",
            level="standard",
            reason="the same call returned the same result 3 times",
            event_ids=["e"],
            trigger_event_id="e",
            action_type="search",
            iteration=3,
            timeline_message="you searched for the same thing 3 times",
            occurred_at=1.0,
        )
        async with AsyncPublisher(settings, topic=settings.topics.warnings) as raw:
            await raw.send_raw(codec.dumps(warning.to_json_dict()), b"tail-lost")
        tail = subprocess.Popen(
            [
                *(sys.executable, "-m", "loopwarden", "tail", "--loop", "tail-lost"),
                *("--from-beginning", "--format", "json", "--give-up-after", "3"),
            ],
            env={**os.environ, **settings_env(settings)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert tail.stdout is not None and tail.stderr is not None
        first = tail.stdout.readline()  # it is connected and following
        assert orjson.loads(first)["warning_id"] == "w-tail-lost"
        broker.stop()
        code = tail.wait(60)
        stderr = tail.stderr.read()
    finally:
        broker.stop()
        if tail is not None and tail.poll() is None:
            tail.kill()
            tail.wait(10)
    where = settings.kafka.bootstrap_servers
    assert code == 3, stderr
    assert f"lost the broker at {where}" in stderr and "giving up after 3 s" in stderr, stderr
    assert stderr.strip().endswith("(--give-up-after 3)"), stderr
    assert "Traceback" not in stderr, stderr
