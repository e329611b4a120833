"""Issue 15.5: topics and the tables' changelogs exist with the configured partition count
before anything (a worker, an API call) could have the broker auto-create one."""

from __future__ import annotations

import pytest
from aiokafka.admin import AIOKafkaAdminClient

from loopwarden.errors import ConfigurationError
from loopwarden.streams.tools.topics import changelog_topics, ensure_topics, topic_names

from .conftest import isolated_settings

pytestmark = pytest.mark.integration


async def _partitions(bootstrap: str, names: list[str]) -> dict[str, int]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        return {t["topic"]: len(t["partitions"]) for t in await admin.describe_topics(names)}
    finally:
        await admin.close()


async def test_changelogs_are_created_with_the_configured_partitions(broker):
    settings = isolated_settings(broker, "layout")
    created = await ensure_topics(settings)
    wanted = topic_names(settings) + changelog_topics(settings)
    assert sorted(created) == sorted(wanted)
    counts = await _partitions(broker.bootstrap_servers, wanted)
    lessons = counts.pop(settings.topics.memory_lessons)
    assert lessons == settings.topics.lessons_partitions == 1  # few, one table: one partition
    assert set(counts.values()) == {settings.topics.partitions}
    assert await ensure_topics(settings) == []  # idempotent


async def test_a_copartitioned_topic_with_another_count_is_refused(broker):
    settings = isolated_settings(broker, "layout-mismatch")
    await ensure_topics(settings)
    wider = settings.model_copy(
        update={"topics": settings.topics.model_copy(update={"partitions": 8})}
    )
    with pytest.raises(ConfigurationError, match="LOOPWARDEN_TOPICS__PARTITIONS"):
        await ensure_topics(wider)
