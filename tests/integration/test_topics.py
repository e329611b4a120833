"""Issue 15.5: topics and the tables' changelogs exist with the configured partition count
before anything (a worker, an API call) could have the broker auto-create one."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from loopwarden.agents.capabilities import CAPABILITIES, STATE_TABLES
from loopwarden.errors import ConfigurationError
from loopwarden.streams.tools.topic_plan import leader_topic
from loopwarden.streams.tools.topics import (
    changelog_topics,
    check_topics,
    described_topics,
    ensure_topics,
    topic_names,
)

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
    created = await ensure_topics(settings, CAPABILITIES)
    wanted = topic_names(settings, CAPABILITIES) + changelog_topics(settings, STATE_TABLES)
    assert sorted(created) == sorted([*wanted, leader_topic(settings)])
    counts = await _partitions(broker.bootstrap_servers, wanted)
    lessons = counts.pop(settings.topics.memory_lessons)
    assert lessons == settings.topics.lessons_partitions == 1  # few, one table: one partition
    assert set(counts.values()) == {settings.topics.partitions}
    assert await ensure_topics(settings, CAPABILITIES) == []  # idempotent


async def test_a_copartitioned_topic_with_another_count_is_refused(broker):
    settings = isolated_settings(broker, "layout-mismatch")
    await ensure_topics(settings, CAPABILITIES)
    wider = settings.model_copy(
        update={"topics": settings.topics.model_copy(update={"partitions": 8})}
    )
    with pytest.raises(ConfigurationError, match="LOOPWARDEN_TOPICS__PARTITIONS"):
        await ensure_topics(wider, CAPABILITIES)


async def test_the_topics_are_described_back_as_planned(broker):
    """Every planned config (retention, compaction, min.insync.replicas) is what the
    broker describes, among every other config it has, set or default."""
    settings = isolated_settings(broker, "described")
    await ensure_topics(settings, CAPABILITIES)
    assert await check_topics(settings, CAPABILITIES) == []
    described = await described_topics(settings, CAPABILITIES)
    memory = described[settings.topics.memory_writes][2]
    assert memory["retention.ms"] == "-1"  # the record a store is rebuilt from
    changelog = described[changelog_topics(settings, STATE_TABLES)[0]][2]
    assert changelog["cleanup.policy"] == "compact"
    assert all(replicas == 1 for _, replicas, _ in described.values())


async def test_a_missing_topic_is_reported_by_the_check(broker):
    settings = isolated_settings(broker, "check-missing")
    assert f"{settings.topics.actions}: missing" in await check_topics(settings, CAPABILITIES)


@pytest.mark.kafka_only
async def test_a_replication_factor_the_cluster_cannot_hold_is_refused_by_name(broker):
    """Apache Kafka refuses each topic in the create answer; they were ignored, and a
    worker set to 3 replicas on one broker started with no topic at all."""
    settings = isolated_settings(broker, "three-replicas")
    three = settings.model_copy(
        update={"topics": settings.topics.model_copy(update={"replication_factor": 3})}
    )
    with pytest.raises(ConfigurationError, match=rf"{settings.topics.actions}: .*replicat"):
        await ensure_topics(three, CAPABILITIES)


@pytest.mark.kafka_only
async def test_a_config_changed_on_the_cluster_is_drift(broker):
    settings = isolated_settings(broker, "drift")
    await ensure_topics(settings, CAPABILITIES)
    admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    await admin.start()
    try:
        resource = ConfigResource(
            ConfigResourceType.TOPIC, settings.topics.warnings, {"retention.ms": "60000"}
        )
        await admin.alter_configs([resource])
    finally:
        await admin.close()
    # the change reaches the broker's described configs through the metadata log
    deadline = asyncio.get_running_loop().time() + 30
    while not (problems := await check_topics(settings, CAPABILITIES)):
        assert asyncio.get_running_loop().time() < deadline, "the change never showed"
        await asyncio.sleep(0.1)
    assert problems == [f"{settings.topics.warnings}: retention.ms=60000, 604800000 planned"]
