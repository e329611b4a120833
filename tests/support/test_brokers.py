"""Which broker a suite runs on: the embedded Tansu (default) or Apache Kafka.

``LOOPWARDEN_TEST_BROKER`` (``embedded`` or ``kafka``) chooses, or pytest's
``--broker`` option, which sets it for the test processes and the workers they start.
"""

from __future__ import annotations

import os
from pathlib import Path

from apache_kafka import KafkaCluster

from loopwarden.errors import ConfigurationError
from loopwarden.settings import Settings
from loopwarden.streams.tools.broker import EmbeddedBroker

BROKER_KINDS = ("embedded", "kafka")
ENVIRONMENT = "LOOPWARDEN_TEST_BROKER"
WORKER_KAFKA_ENV = Path(__file__).resolve().parents[2] / "infra" / "worker-kafka.env"
"""The worker's Kafka settings on Apache Kafka, which docker-compose.yml's workers read."""
PREFIX = "LOOPWARDEN_KAFKA__"


def broker_kind() -> str:
    """The broker the suites start: ``embedded`` unless ``LOOPWARDEN_TEST_BROKER`` says."""
    kind = os.environ.get(ENVIRONMENT, "embedded").strip().lower() or "embedded"
    if kind not in BROKER_KINDS:
        raise ConfigurationError(f"{ENVIRONMENT}={kind!r}: choose one of {', '.join(BROKER_KINDS)}")
    return kind


def new_test_broker(
    log_path: Path, *, advertised_port: int | None = None, kind: str | None = None
) -> EmbeddedBroker | KafkaCluster:
    """An unstarted broker of :func:`broker_kind` (one Apache Kafka node)."""
    if (kind or broker_kind()) == "kafka":
        return KafkaCluster(1, log_path=log_path, advertised_port=advertised_port)
    return EmbeddedBroker(log_path=log_path, advertised_port=advertised_port)


def kafka_worker_settings(settings: Settings) -> Settings:
    """``settings`` with the Kafka client settings of ``infra/worker-kafka.env`` (those of
    docker-compose.yml's workers), as a worker on Apache Kafka runs."""
    lines = (line.strip() for line in WORKER_KAFKA_ENV.read_text().splitlines())
    pairs = dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))
    unknown = [name for name in pairs if not name.startswith(PREFIX)]
    if unknown:
        raise ConfigurationError(f"{WORKER_KAFKA_ENV} sets {unknown}: only {PREFIX}* belong there")
    updates = {name.removeprefix(PREFIX).lower(): value for name, value in pairs.items()}
    kafka = type(settings.kafka).model_validate({**dict(settings.kafka), **updates})
    return settings.model_copy(update={"kafka": kafka})
