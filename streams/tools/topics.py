"""Topic administration: create loopwarden's topics as planned, and check them on a cluster.

What is created is :func:`~loopwarden.streams.tools.topic_plan.topic_plan`'s; this
module talks to the broker: it creates what is missing (and says why a topic could
not be created: the broker answers each topic on its own), waits until every new
partition has a leader (Apache Kafka answers a create before every broker knows the
topic), and describes topics back to compare them with the plan.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import for_code

from loopwarden.errors import ConfigurationError, LoopwardenError
from loopwarden.settings import Settings
from loopwarden.streams.client.connect import start_client
from loopwarden.streams.client.security import client_options
from loopwarden.streams.runtime.capability import Capability
from loopwarden.streams.tools.topic_plan import (
    TopicSpec,
    changelog_topics,
    copartitioned_topics,
    drift,
    state_tables,
    topic_names,
    topic_plan,
)

log = logging.getLogger(__name__)

TOPIC_ALREADY_EXISTS = 36
LEADERS_WITHIN_S = 30.0

__all__ = [
    "changelog_topics",
    "check_topics",
    "copartitioned_topics",
    "ensure_topic",
    "ensure_topics",
    "topic_names",
]


def _admin(settings: Settings) -> AIOKafkaAdminClient:
    return AIOKafkaAdminClient(
        bootstrap_servers=settings.kafka.bootstrap_servers,
        **client_options(settings.kafka.security),
    )


async def ensure_topics(
    settings: Settings, capabilities: Iterable[Capability], tables: Iterable[str] | None = None
) -> list[str]:
    """Create any missing topic of ``capabilities`` (see :func:`topic_plan`) and the
    changelog of each of ``tables`` (default: the capabilities'; a worker's: its app's);
    return the names created.

    Changelogs are created here, before any worker or API call can make the broker
    auto-create one with its default partition count. Existing topics are left as
    they are, but a co-partitioned one (see :func:`copartitioned_topics`) with
    another partition count than ``topics.partitions`` is refused: loops would be
    looked up on the wrong partition. A topic the broker refuses (too many replicas
    for its brokers, a policy, no permission) raises :class:`ConfigurationError`
    naming the topic and the broker's reason.
    """
    admin = _admin(settings)
    await start_client(admin, settings.kafka.bootstrap_servers)
    try:
        existing = set(await admin.list_topics())
        capabilities = list(capabilities)
        tables = state_tables(capabilities) if tables is None else list(tables)
        await _check_partitions(admin, settings, existing, capabilities, tables)
        plan = topic_plan(settings, capabilities, tables)
        missing = [spec for spec in plan if spec.name not in existing]
        if not missing:
            return []
        response = await admin.create_topics([_new_topic(spec) for spec in missing])
        _raise_refusals(response.to_object())
        await _wait_for_leaders(admin, [spec.name for spec in missing])
        return [spec.name for spec in missing]
    finally:
        await admin.close()


def _new_topic(spec: TopicSpec) -> NewTopic:
    return NewTopic(
        spec.name,
        num_partitions=spec.partitions,
        replication_factor=spec.replication_factor,
        topic_configs=dict(spec.configs),
    )


def _raise_refusals(answer: dict[str, Any]) -> None:
    refused = []
    for topic in answer.get("topic_errors") or answer.get("topics") or ():
        code = topic.get("error_code", 0)
        if code in (0, TOPIC_ALREADY_EXISTS):  # created, or by someone else meanwhile
            continue
        reason = topic.get("error_message") or for_code(code).__name__
        refused.append(f"{topic.get('topic') or topic.get('name')}: {reason}")
    if refused:
        raise ConfigurationError(
            "the broker refused to create "
            + "; ".join(refused)
            + " (LOOPWARDEN_TOPICS__REPLICATION_FACTOR and __MIN_INSYNC_REPLICAS set the "
            "replicas; `loopwarden topics --plan` prints the topics for an administrator)"
        )


async def _wait_for_leaders(admin: AIOKafkaAdminClient, names: list[str]) -> None:
    """Until every partition of ``names`` has a leader; a worker or client started
    before would be told the topic does not exist."""
    deadline = time.monotonic() + LEADERS_WITHIN_S
    while True:
        pending = [
            topic["topic"]
            for topic in await admin.describe_topics(names)
            if topic.get("error_code")
            or not topic.get("partitions")
            or any(p.get("leader", -1) < 0 for p in topic["partitions"])
        ]
        if not pending:
            return
        if time.monotonic() > deadline:
            raise LoopwardenError(f"no leader after {LEADERS_WITHIN_S:g} s for {pending}")
        await asyncio.sleep(0.1)


async def ensure_topic(settings: Settings, spec: TopicSpec) -> bool:
    """Create one topic of ``spec`` when missing (a cluster may create none on its own:
    ``auto.create.topics.enable=false``); True when it was created."""
    admin = _admin(settings)
    await start_client(admin, settings.kafka.bootstrap_servers)
    try:
        if spec.name in set(await admin.list_topics()):
            return False
        _raise_refusals((await admin.create_topics([_new_topic(spec)])).to_object())
        await _wait_for_leaders(admin, [spec.name])
        return True
    finally:
        await admin.close()


async def _check_partitions(
    admin: AIOKafkaAdminClient,
    settings: Settings,
    existing: set[str],
    capabilities: list[Capability],
    tables: list[str],
) -> None:
    copartitioned = copartitioned_topics(settings, capabilities, tables)
    names = [name for name in copartitioned if name in existing]
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


async def described_topics(
    settings: Settings, capabilities: Iterable[Capability]
) -> dict[str, tuple[int, int, dict[str, str]]]:
    """``{topic: (partitions, replicas, configs)}`` of ``capabilities``' planned topics
    that exist, as the cluster describes them (every config, set at creation or a
    default)."""
    admin = _admin(settings)
    await start_client(admin, settings.kafka.bootstrap_servers)
    try:
        existing = set(await admin.list_topics())
        plan = topic_plan(settings, capabilities)
        names = [spec.name for spec in plan if spec.name in existing]
        if not names:
            return {}
        layout = {
            topic["topic"]: (
                len(topic["partitions"]),
                min((len(p.get("replicas") or ()) for p in topic["partitions"]), default=0),
            )
            for topic in await admin.describe_topics(names)
        }
        resources = [ConfigResource(ConfigResourceType.TOPIC, name) for name in names]
        configs: dict[str, dict[str, str]] = {}
        for answer in await admin.describe_configs(resources):
            for resource in answer.to_object()["resources"]:
                configs[resource["resource_name"]] = {
                    entry["config_names"]: entry["config_value"]
                    for entry in resource["config_entries"]
                }
        return {name: (*layout[name], configs.get(name, {})) for name in names}
    finally:
        await admin.close()


async def check_topics(settings: Settings, capabilities: Iterable[Capability]) -> list[str]:
    """What differs between the cluster and ``capabilities``' plan: missing topics,
    partitions, replicas and configs (empty: every topic as planned)."""
    capabilities = list(capabilities)
    described = await described_topics(settings, capabilities)
    problems = []
    for spec in topic_plan(settings, capabilities):
        if spec.name not in described:
            problems.append(f"{spec.name}: missing")
            continue
        problems += drift(spec, *described[spec.name])
    return problems
