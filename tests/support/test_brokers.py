"""Which broker a suite runs on: the embedded Tansu (default) or Apache Kafka.

``LOOPWARDEN_TEST_BROKER`` (``embedded`` or ``kafka``) chooses, or pytest's
``--broker`` option, which sets it for the test processes and the workers they start.
"""

from __future__ import annotations

import os
from pathlib import Path

from apache_kafka import KafkaCluster

from loopwarden.errors import ConfigurationError
from loopwarden.streams.tools.broker import EmbeddedBroker

BROKER_KINDS = ("embedded", "kafka")
ENVIRONMENT = "LOOPWARDEN_TEST_BROKER"


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
