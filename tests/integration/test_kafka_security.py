"""SASL and TLS against a real listener: one Apache Kafka node with a SASL_SSL listener
(SCRAM-SHA-256 over TLS, a certificate made for loopback). A worker, the publisher, a
subscriber and the topic admin connect through it; wrong credentials and an untrusted
certificate are refused with what to check, not "cannot reach a Kafka broker"."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from types import SimpleNamespace

import pytest
from apache_kafka import KafkaCluster

from loopwarden.errors import BrokerUnavailableError
from loopwarden.schemas.warnings import WarningKind
from loopwarden.settings import Settings, settings_env
from loopwarden.streams.client.publisher import AsyncPublisher
from loopwarden.streams.client.subscriber import WarningSubscriber

from .conftest import isolated_settings

pytestmark = [pytest.mark.integration, pytest.mark.kafka_only]


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    folder = tmp_path_factory.mktemp("secured")
    with KafkaCluster(
        1, workdir=folder / "kafka", log_path=folder / "broker.log", secured=True
    ) as kafka:
        yield kafka


def over_sasl_ssl(kafka: KafkaCluster, name: str, password: str | None = None) -> Settings:
    assert kafka.secured is not None
    listener = SimpleNamespace(bootstrap_servers=kafka.secured.bootstrap_servers)
    settings = isolated_settings(listener, name, ["monitor"])
    security = kafka.secured.client_security(password)
    return settings.model_copy(
        update={"kafka": settings.kafka.model_copy(update={"security": security})}
    )


async def test_a_worker_and_its_clients_work_over_sasl_ssl(secured, worker_factory):
    settings = over_sasl_ssl(secured, "sasl-ssl")
    worker = worker_factory(settings)  # creates the topics through the listener too
    loop_id = f"secure-{uuid.uuid4().hex[:6]}"
    async with WarningSubscriber(settings, loop_id=loop_id) as warnings:
        async with AsyncPublisher(settings) as publisher:
            await publisher.publish(loop_id, "deploy", success=False, error_message="denied")
        got = await warnings.collect(1, 90)
    assert [w.kind for w in got] == [WarningKind.ACTION_FAILED], worker.log()[-3000:]
    checked = subprocess.run(
        [sys.executable, "-m", "loopwarden", "topics", "--check"],
        env={**os.environ, **settings_env(settings)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert checked.returncode == 0, checked.stderr
    assert "topics exist as planned" in checked.stdout
    assert secured.secured.password not in worker.log()  # secrets never logged


async def test_wrong_credentials_are_named_as_such(secured):
    settings = over_sasl_ssl(secured, "wrong-password", password="not-the-password")
    with pytest.raises(BrokerUnavailableError) as refused:
        async with AsyncPublisher(settings):
            pass
    assert "refused the connection" in str(refused.value)
    assert "SaslAuthenticationFailed" in str(refused.value)
    assert "LOOPWARDEN_KAFKA__SECURITY__" in str(refused.value)
    assert "not-the-password" not in str(refused.value)


async def test_an_untrusted_certificate_is_named_as_such(secured):
    settings = over_sasl_ssl(secured, "no-ca")
    security = settings.kafka.security.model_copy(update={"ssl_cafile": None})  # system CAs
    settings = settings.model_copy(
        update={"kafka": settings.kafka.model_copy(update={"security": security})}
    )
    with pytest.raises(BrokerUnavailableError, match=r"refused the connection: .*CERTIFICATE"):
        async with WarningSubscriber(settings):
            pass
