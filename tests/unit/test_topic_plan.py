"""The topics a worker creates, as planned: configs, replicas, the platform team's commands,
and how a described topic differs (no broker: the plan is pure)."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from loopwarden.agents.capabilities import CAPABILITIES, STATE_TABLES
from loopwarden.settings import Settings
from loopwarden.settings.topics import TopicSettings
from loopwarden.streams.tools.topic_plan import (
    changelog_topics,
    create_commands,
    drift,
    leader_topic,
    topic_names,
    topic_plan,
)

ROOT = Path(__file__).resolve().parents[2]


def with_topics(**changes) -> Settings:
    settings = Settings()
    return settings.model_copy(update={"topics": settings.topics.model_copy(update=changes)})


@pytest.mark.parametrize(("replicas", "insync"), [(1, 1), (2, 1), (3, 2), (5, 2)])
def test_min_insync_replicas_follows_the_replication_factor(replicas, insync):
    assert TopicSettings(replication_factor=replicas).min_insync() == insync


def test_min_insync_replicas_above_the_replicas_is_refused():
    with pytest.raises(ValidationError, match="no write could succeed"):
        TopicSettings(replication_factor=2, min_insync_replicas=3)


def test_every_topic_is_planned_once_with_explicit_configs():
    settings = with_topics(replication_factor=3)
    plan = {spec.name: spec for spec in topic_plan(settings, CAPABILITIES)}
    assert sorted(plan) == sorted(
        [
            *topic_names(settings, CAPABILITIES),
            *changelog_topics(settings, STATE_TABLES),
            leader_topic(settings),
        ]
    )
    assert plan[leader_topic(settings)].partitions == 1  # Faust's leader election
    for spec in plan.values():
        assert spec.replication_factor == 3
        assert spec.configs["min.insync.replicas"] == "2"
    assert plan[settings.topics.actions].configs == {
        "cleanup.policy": "delete",
        "retention.ms": "604800000",
        "min.insync.replicas": "2",
    }
    for memory in (settings.topics.memory_writes, settings.topics.memory_lessons):
        assert plan[memory].configs["retention.ms"] == "-1"  # the record of the store
        assert plan[memory].kind == "memory"
    changelog = plan[changelog_topics(settings, STATE_TABLES)[0]]
    assert changelog.configs["cleanup.policy"] == "compact"
    assert "retention.ms" not in changelog.configs and "segment.ms" not in changelog.configs
    assert plan[settings.topics.memory_lessons].partitions == 1


def test_a_changelog_segment_setting_reaches_every_changelog_only():
    settings = with_topics(changelog_segment_ms=5000)
    segments = {s.name: s.configs.get("segment.ms") for s in topic_plan(settings, CAPABILITIES)}
    assert {segments[name] for name in changelog_topics(settings, STATE_TABLES)} == {"5000"}
    assert segments[settings.topics.actions] is None


def test_the_commands_create_exactly_the_plan():
    settings = with_topics(replication_factor=3, partitions=12)
    plan = topic_plan(settings, CAPABILITIES)
    lines = create_commands(plan, "kafka-1:9092,kafka-2:9092")
    assert len(lines) == len(plan)
    words = shlex.split(lines[0])
    assert words[:5] == ["kafka-topics.sh", "--bootstrap-server", "kafka-1:9092,kafka-2:9092",
                         "--create", "--if-not-exists"]  # fmt: skip
    assert words[words.index("--topic") + 1] == plan[0].name
    assert words[words.index("--partitions") + 1] == "12"
    assert words[words.index("--replication-factor") + 1] == "3"
    configs = [words[i + 1] for i, w in enumerate(words) if w == "--config"]
    assert configs == [f"{k}={v}" for k, v in plan[0].configs.items()]


def test_drift_names_each_difference():
    spec = topic_plan(Settings(), CAPABILITIES)[0]
    described = {**spec.configs, "retention.ms": "60000", "segment.bytes": "1073741824"}
    assert drift(spec, spec.partitions, spec.replication_factor, dict(spec.configs)) == []
    assert drift(spec, 4, 1, described) == [
        f"{spec.name}: 4 partitions, {spec.partitions} planned",
        f"{spec.name}: retention.ms=60000, {spec.configs['retention.ms']} planned",
    ]


def test_the_compose_broker_is_the_tested_apache_kafka():
    """docker-compose.yml's image and infra/kafka/pom.xml (make test-kafka) pin one version."""
    sys.path.insert(0, str(ROOT / "tests" / "support"))
    from apache_kafka import kafka_version

    image = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]["kafka"]["image"]
    assert re.fullmatch(r"apache/kafka:(\S+)", image).group(1) == kafka_version()
    assert kafka_version().startswith("4.")


def test_every_topic_setting_is_a_capabilitys_route_and_the_plan_lists_exactly_those():
    """The hand-listed plan holds to the declarations: each topic it names is a
    capability's input, a keyed declaration's home or re-route topic, a named output's
    route or the dead-letter topic, and every topic setting is one of them. The one
    exception: the OTLP spans topic is planned only for a worker with the otlp role."""
    from loopwarden.streams.runtime.outputs import ROUTES

    t = Settings().topics
    declared = {t.dead_letter}
    declared |= {route.topic(t) for route in ROUTES.values()}
    for capability in CAPABILITIES:
        declared |= set(capability.inputs(t))
        if capability.state is not None:
            declared |= {capability.state.home_topic(t), capability.state.reroute_topic(t)}
    settings = [name for name, info in TopicSettings.model_fields.items() if info.annotation is str]
    assert {getattr(t, name) for name in settings} == declared
    with_otlp = Settings().model_copy(update={"roles": frozenset({"monitor", "otlp"})})
    assert set(topic_names(with_otlp, CAPABILITIES)) == declared
    assert set(topic_names(Settings(), CAPABILITIES)) == declared - {t.otlp_spans}
