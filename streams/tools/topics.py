"""Topic administration: create loopwarden's topics with the configured layout."""

from __future__ import annotations

import logging

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError

from loopwarden.errors import ConfigurationError
from loopwarden.settings import Settings
from loopwarden.streams.client.connect import start_client
from loopwarden.streams.client.security import client_options

log = logging.getLogger(__name__)

LOOP_STATE_TABLE = "loop-state"
FAMILY_TABLE = "loop-family"
TASK_TABLE = "experience-tasks"
FLEET_TABLE = "fleet-family"
_TABLES = (LOOP_STATE_TABLE, FAMILY_TABLE, TASK_TABLE, FLEET_TABLE)


def changelog_topics(settings: Settings) -> list[str]:

    return [f"{settings.app_id}-{table}-changelog" for table in _TABLES]


def copartitioned_topics(settings: Settings) -> list[str]:
    """Topics whose partition *n* must hold the same loops: inputs, re-routes, changelogs."""
    t = settings.topics
    return [
        t.actions,
        t.actions_reroute,
        t.loop_completions,
        t.completions_reroute,
        t.fleet_reroute,
        *changelog_topics(settings),
    ]


def topic_names(settings: Settings) -> list[str]:
    """The topics a worker reads and writes (not Faust's internal ones)."""
    t = settings.topics
    return [
        t.actions,
        t.warnings,
        t.reflection_requests,
        t.loop_completions,
        t.reflections,
        t.memory_writes,
        t.memory_lessons,
        t.memory_outcomes,
        t.decisions,
        t.dead_letter,
        t.advice,
        t.actions_reroute,
        t.completions_reroute,
        t.fleet_reroute,
        t.fleet_warnings,
        t.tool_outages,
        *([t.otlp_spans] if "otlp" in settings.roles else []),
    ]


async def ensure_topics(settings: Settings) -> list[str]:
    """Create any missing loopwarden topic and table changelog; return the names created.

    Changelogs are created here, before any worker or API call can make the broker
    auto-create one with its default partition count. Existing topics are left as
    they are, but a co-partitioned one (see :func:`copartitioned_topics`) with
    another partition count than ``topics.partitions`` is refused: loops would be
    looked up on the wrong partition.
    """
    admin = AIOKafkaAdminClient(
        bootstrap_servers=settings.kafka.bootstrap_servers,
        **client_options(settings.kafka.security),
    )
    await start_client(admin, settings.kafka.bootstrap_servers)
    try:
        existing = set(await admin.list_topics())
        await _check_partitions(admin, settings, existing)
        changelogs = changelog_topics(settings)
        wanted = topic_names(settings) + changelogs
        missing = [name for name in wanted if name not in existing]
        if not missing:
            return []
        new_topics = [
            NewTopic(
                name,
                num_partitions=settings.topics.partitions_of(name),
                replication_factor=settings.topics.replication_factor,
                # explicit configs: Tansu only describes configs set at creation
                topic_configs={"cleanup.policy": "compact"}
                if name in changelogs
                else {"cleanup.policy": "delete", "retention.ms": "604800000"},
            )
            for name in missing
        ]
        try:
            await admin.create_topics(new_topics)
        except TopicAlreadyExistsError:
            log.debug("topics created concurrently: %s", missing)
        return missing
    finally:
        await admin.close()


async def _check_partitions(
    admin: AIOKafkaAdminClient, settings: Settings, existing: set[str]
) -> None:
    names = [name for name in copartitioned_topics(settings) if name in existing]
    if not names:
        return
    wrong = []
    for topic in await admin.describe_topics(names):
        count = len(topic.get("partitions") or ())
        if count and count != settings.topics.partitions:
            wrong.append(f"{topic['topic']} has {count}")
    if wrong:
        raise ConfigurationError(
            f"topics.partitions is {settings.topics.partitions} but "
            + ", ".join(wrong)
            + ": set LOOPWARDEN_TOPICS__PARTITIONS to the topics' count, or recreate them"
        )
