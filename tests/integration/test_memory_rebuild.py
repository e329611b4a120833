"""Memories rebuilt from the log: a worker's LanceDB folder deleted, then rebuilt by
``loopwarden memory rebuild`` from the memory topics, holds the same rows (count and
content digest) as before — clients' writes (a duplicate, a conflict, a secret) and
the monitor's lessons alike."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid

import pytest
from warm_processes import run_warm

from loopwarden.agents.memory.service import MemoryService
from loopwarden.settings import settings_env
from loopwarden.storage.memory_digest import content_digest, vector_difference
from loopwarden.streams.client.json_subscribers import MemoryOutcomeSubscriber
from loopwarden.streams.client.publisher import AsyncPublisher

from .conftest import isolated_settings
from .inprocess import running_app
from .test_memory_stream import WRITES, publish_all

pytestmark = pytest.mark.integration

FAILURES = [
    ("deploy", "permission denied: ./deploy.sh"),
    ("migrate", 'relation "users" does not exist'),
    ("build", "cc: command not found"),
]


def rebuild(settings, *options: str) -> subprocess.CompletedProcess[str]:
    """``loopwarden memory rebuild`` in a process of its own, forked warm."""
    command = ["memory", "rebuild", "--no-progress", *options]
    return run_warm(command, {**os.environ, **settings_env(settings)}, timeout=300)


async def test_a_deleted_store_is_rebuilt_from_the_topics_with_the_same_rows(broker):
    settings = isolated_settings(broker, "rebuild", ["monitor", "memory"])
    scope = f"s-{uuid.uuid4().hex[:6]}"
    lessons = settings.detection.learning_scope
    async with (
        running_app(settings),
        MemoryOutcomeSubscriber(settings, scope=scope) as writes,
        MemoryOutcomeSubscriber(settings, scope=lessons) as learned,
    ):
        await publish_all(settings, scope)
        async with AsyncPublisher(settings) as publisher:
            for n, (tool, error) in enumerate(FAILURES):  # a lesson each
                await publisher.publish(f"rebuild-{n}", tool, success=False, error_message=error)
        statuses = [o["status"] for o in await writes.collect(len(WRITES), 90)]
        learned_statuses = [o["status"] for o in await learned.collect(len(FAILURES), 90)]
    assert statuses.count("duplicate") == 1 and "stored_with_conflicts" in statuses
    assert all(status.startswith("stored") for status in learned_statuses), learned_statuses
    live = MemoryService(settings.memory).table
    before = content_digest(live)
    kept = f"{settings.memory.uri}-live"
    shutil.copytree(settings.memory.uri, kept)
    assert before.rows == len(WRITES) - 1 + len(FAILURES)  # the duplicate is not a row

    shutil.rmtree(settings.memory.uri)
    done = rebuild(settings)
    assert done.returncode == 0, done.stderr
    rebuilt = MemoryService(settings.memory).table
    assert content_digest(rebuilt) == before
    live = MemoryService(settings.memory.model_copy(update={"uri": kept})).table
    assert vector_difference(live, rebuilt) < 1e-5  # computed again from the same texts
    assert f"{settings.memory.uri}: {before}" in done.stdout
    assert "1 duplicate" in done.stderr and "0 bad write(s)" in done.stderr

    again = rebuild(settings)  # into the rebuilt store: nothing is added
    assert again.returncode == 0, again.stderr
    assert "already_stored" in again.stderr
    assert content_digest(MemoryService(settings.memory).table) == before
