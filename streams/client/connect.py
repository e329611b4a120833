"""Starting a Kafka client, with one clear error when nothing answers.

aiokafka raises ``KafkaConnectionError("Unable to bootstrap from …")``; every
client loopwarden starts (publisher, subscribers, topic admin) turns it into a
:class:`~loopwarden.errors.BrokerUnavailableError` (or the given subclass) that
names the servers and how to point loopwarden elsewhere.
"""

from __future__ import annotations

from typing import Any

from aiokafka.errors import KafkaConnectionError

from loopwarden.errors import BrokerUnavailableError


def unreachable_message(bootstrap_servers: str) -> str:
    """What to tell someone whose broker does not answer."""
    return (
        f"cannot reach a Kafka broker at {bootstrap_servers}: start one (`loopwarden broker`) "
        "or point loopwarden at yours (--bootstrap-servers or LOOPWARDEN_KAFKA__BOOTSTRAP_SERVERS)"
    )


async def start_client(
    client: Any,
    bootstrap_servers: str,
    error: type[BrokerUnavailableError] = BrokerUnavailableError,
) -> None:
    """``await client.start()``; an unreachable broker raises ``error``."""
    try:
        await client.start()
    except KafkaConnectionError as exc:
        close = getattr(client, "stop", None) or getattr(client, "close", None)
        if close is not None:
            await close()
        raise error(unreachable_message(bootstrap_servers)) from exc


async def topic_partitions(consumer: Any, topic: str) -> set[int]:
    """The partitions of ``topic`` as the broker describes them now (empty: no topic).

    Asked in a metadata request of its own for every topic. ``consumer.topics()``
    does that too but keeps the answer apart from the metadata the consumer's
    ``partitions_for_topic`` reads, which until its first refresh is the answer to its
    bootstrap request: that request names no topic, and Apache Kafka answers it with
    none (the embedded broker with all, which hid this).
    """
    cluster = await consumer._client.fetch_all_metadata()
    return set(cluster.partitions_for_topic(topic) or ())
