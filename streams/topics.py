"""Topic administration: create loopwarden's topics with the configured layout."""

from __future__ import annotations

import logging

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaConnectionError, TopicAlreadyExistsError

from loopwarden.errors import BrokerError
from loopwarden.settings import Settings

log = logging.getLogger(__name__)


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
        t.memory_outcomes,
        t.decisions,
        t.dead_letter,
    ]


async def ensure_topics(settings: Settings) -> list[str]:
    """Create any missing loopwarden topic; return the names created.

    Existing topics are left as they are (their partition count is not changed).
    """
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka.bootstrap_servers)
    try:
        await admin.start()
    except KafkaConnectionError as exc:
        raise BrokerError(
            f"cannot reach Kafka at {settings.kafka.bootstrap_servers} "
            "(LOOPWARDEN_KAFKA__BOOTSTRAP_SERVERS)"
        ) from exc
    try:
        existing = set(await admin.list_topics())
        missing = [name for name in topic_names(settings) if name not in existing]
        if not missing:
            return []
        new_topics = [
            NewTopic(
                name,
                num_partitions=settings.topics.partitions,
                replication_factor=settings.topics.replication_factor,
                # explicit configs: Tansu only describes configs set at creation
                topic_configs={"cleanup.policy": "delete", "retention.ms": "604800000"},
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
