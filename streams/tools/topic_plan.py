"""The topics a worker needs, exactly as it creates them: names, partitions, replicas, configs.

Pure: :func:`topic_plan` is what ``ensure_topics`` creates, what ``loopwarden topics
--plan`` prints for a platform team that forbids clients to create topics, and what
``loopwarden topics --check`` compares the cluster's described configs with. Nothing
here lists a topic: they are derived from the capabilities' declarations (their
inputs, their keyed states' home and re-route topics, the named outputs' routes), so a
new capability's topics are planned, created and checked from its row.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from loopwarden.settings import Settings
from loopwarden.streams.runtime.capability import Capability
from loopwarden.streams.runtime.outputs import ROUTES


@dataclass(frozen=True)
class TopicSpec:
    """One topic: what it holds and how it is created."""

    name: str
    partitions: int
    replication_factor: int
    configs: dict[str, str] = field(default_factory=dict)
    kind: str = "events"
    """``events`` (retention), ``memory`` (the record of the memory store), ``changelog``,
    ``faust`` (its leader election)."""


def state_tables(capabilities: Iterable[Capability]) -> list[str]:
    """The tables of ``capabilities``' keyed state declarations, in declaration order."""
    return [c.state.table for c in capabilities if c.state is not None]


def changelog_topics(settings: Settings, tables: Iterable[str]) -> list[str]:
    """The changelogs of the Faust ``tables`` (``<app id>-<table>-changelog``)."""
    return [f"{settings.app_id}-{table}-changelog" for table in tables]


def keyed_topics(settings: Settings, capabilities: Iterable[Capability]) -> list[str]:
    """The home and re-route topics of ``capabilities``' keyed states, each once."""
    t = settings.topics
    found: dict[str, None] = {}
    for capability in capabilities:
        if capability.state is not None:
            found[capability.state.home_topic(t)] = None
            found[capability.state.reroute_topic(t)] = None
    return list(found)


def copartitioned_topics(
    settings: Settings, capabilities: Iterable[Capability], tables: Iterable[str] | None = None
) -> list[str]:
    """Topics whose partition *n* must hold the same keys: the keyed states' home and
    re-route topics and the changelogs of ``tables`` (default: ``capabilities``')."""
    capabilities = list(capabilities)
    tables = state_tables(capabilities) if tables is None else tables
    return [*keyed_topics(settings, capabilities), *changelog_topics(settings, tables)]


def topic_names(settings: Settings, capabilities: Iterable[Capability]) -> list[str]:
    """The topics a worker reads and writes (not Faust's internal ones nor changelogs),
    derived from the declarations, each once: the keyed states' home and re-route
    topics, every named output's route and the dead-letter topic — planned whatever
    the roles, another worker of the group may run them — and the inputs of the
    capabilities ``settings`` run (a topic only read, written by another program such
    as the OpenTelemetry Collector's spans, is planned where it is read)."""
    t = settings.topics
    capabilities = list(capabilities)
    found: dict[str, None] = dict.fromkeys(keyed_topics(settings, capabilities))
    found.update(dict.fromkeys(route.topic(t) for route in ROUTES.values()))
    found[t.dead_letter] = None
    for capability in capabilities:
        if capability.runs_in(settings):
            found.update(dict.fromkeys(capability.inputs(t)))
    return list(found)


def leader_topic(settings: Settings) -> str:
    """Faust's leader-election topic (``<app id>-__assignor-__leader``, one partition)."""
    return f"{settings.app_id}-__assignor-__leader"


def events_topic(settings: Settings, name: str) -> TopicSpec:
    """An events topic of ``name`` laid out as loopwarden's own (``replay --emit-to``)."""
    t = settings.topics
    configs = {
        "cleanup.policy": "delete",
        "retention.ms": str(t.retention_ms),
        "min.insync.replicas": str(t.min_insync()),
    }
    return TopicSpec(name, t.partitions, t.replication_factor, configs)


def topic_plan(
    settings: Settings, capabilities: Iterable[Capability], tables: Iterable[str] | None = None
) -> list[TopicSpec]:
    """Every topic a worker with ``settings`` and ``capabilities`` needs, with the configs
    it is created with; changelogs for ``tables`` (default: the capabilities' state
    tables; a worker's own: those its app declared).

    Configs are explicit, never the broker's defaults, so that a cluster described
    back says the same whatever its defaults (``--check``).
    """
    t = settings.topics
    capabilities = list(capabilities)
    tables = state_tables(capabilities) if tables is None else tables
    insync = str(t.min_insync())
    memory = {t.memory_writes, t.memory_lessons}
    plan: list[TopicSpec] = []
    for name in topic_names(settings, capabilities):
        spec = replace(events_topic(settings, name), partitions=t.partitions_of(name))
        if name in memory:  # the record a store is rebuilt from
            retention = {"retention.ms": str(t.memory_retention_ms)}
            spec = replace(spec, configs={**spec.configs, **retention}, kind="memory")
        elif name == t.verdicts:  # a verdict matters while a guard waits for it
            retention = {"retention.ms": str(t.verdicts_retention_ms)}
            spec = replace(spec, configs={**spec.configs, **retention})
        plan.append(spec)
    # Faust declares it at start, but a worker's group may form before a cluster that
    # creates no topic on its own has it: no leader, no leader timers (index upkeep,
    # maintenance) until the next metadata refresh, up to five minutes later
    plan.append(replace(events_topic(settings, leader_topic(settings)), partitions=1, kind="faust"))
    for name in changelog_topics(settings, tables):
        configs = {"cleanup.policy": "compact", "min.insync.replicas": insync}
        if t.changelog_segment_ms is not None:
            configs["segment.ms"] = str(t.changelog_segment_ms)
        plan.append(TopicSpec(name, t.partitions, t.replication_factor, configs, "changelog"))
    return plan


def create_commands(plan: list[TopicSpec], bootstrap_servers: str) -> list[str]:
    """``kafka-topics.sh --create`` lines a platform team can run for ``plan``."""
    lines = []
    for spec in plan:
        words = [
            "kafka-topics.sh", "--bootstrap-server", bootstrap_servers, "--create",
            "--if-not-exists", "--topic", spec.name,
            "--partitions", str(spec.partitions),
            "--replication-factor", str(spec.replication_factor),
        ]  # fmt: skip
        for key, value in spec.configs.items():
            words += ["--config", f"{key}={value}"]
        lines.append(shlex.join(words))
    return lines


def drift(spec: TopicSpec, partitions: int, replicas: int, configs: dict[str, str]) -> list[str]:
    """How a described topic differs from ``spec`` (empty: as planned)."""
    found = []
    if partitions != spec.partitions:
        found.append(f"{spec.name}: {partitions} partitions, {spec.partitions} planned")
    if replicas != spec.replication_factor:
        found.append(f"{spec.name}: replication {replicas}, {spec.replication_factor} planned")
    for key, wanted in spec.configs.items():
        actual = configs.get(key)
        if actual != wanted:
            found.append(f"{spec.name}: {key}={actual}, {wanted} planned")
    return found
