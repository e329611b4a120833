"""A broker that comes back without its data: the worker says so and exits (so that its
supervisor restarts it and the restart recreates the topics), instead of staying alive
and doing nothing."""

from __future__ import annotations

import subprocess

import pytest
from faultsuite.harness import wait_ready

from loopwarden.streams.tools.broker import EmbeddedBroker

from .conftest import isolated_settings

pytestmark = pytest.mark.integration


async def test_a_worker_exits_when_its_broker_lost_the_topics(tmp_path, worker_factory):
    first = EmbeddedBroker(log_path=tmp_path / "first.log").start()
    second = None
    try:
        settings = isolated_settings(first, "lost")
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
