"""The topics a worker needs, exactly as it creates them: names, partitions, replicas, configs.

Pure: :func:`topic_plan` is what ``ensure_topics`` creates, what ``loopwarden topics
--plan`` prints for a platform team that forbids clients to create topics, and what
``loopwarden topics --check`` compares the cluster's described configs with.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from loopwarden.settings import Settings


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


def changelog_topics(settings: Settings, tables: Iterable[str]) -> list[str]:
    """The changelogs of the Faust ``tables`` (``<app id>-<table>-changelog``); a worker's
    tables are those of its capabilities' state declarations (the composition root's
    ``STATE_TABLES``)."""
    return [f"{settings.app_id}-{table}-changelog" for table in tables]


def copartitioned_topics(settings: Settings, tables: Iterable[str]) -> list[str]:
    """Topics whose partition *n* must hold the same loops: inputs, re-routes, changelogs."""
    t = settings.topics
    return [
        t.actions,
        t.actions_reroute,
        t.loop_completions,
        t.completions_reroute,
        t.fleet_reroute,
        *changelog_topics(settings, tables),
    ]


def topic_names(settings: Settings) -> list[str]:
    """The topics a worker reads and writes (not Faust's internal ones nor changelogs)."""
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
        t.verdicts,
        *([t.otlp_spans] if "otlp" in settings.roles else []),
    ]


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


def topic_plan(settings: Settings, tables: Iterable[str]) -> list[TopicSpec]:
    """Every topic a worker with ``settings`` and the state ``tables`` needs, with the
    configs it is created with.

    Configs are explicit, never the broker's defaults, so that a cluster described
    back says the same whatever its defaults (``--check``).
    """
    t = settings.topics
    insync = str(t.min_insync())
    memory = {t.memory_writes, t.memory_lessons}
    plan: list[TopicSpec] = []
    for name in topic_names(settings):
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
