"""Why a client could not start: nothing answered, or a broker refused it (credentials,
TLS). aiokafka only logs the reason and raises "Unable to bootstrap"; ``start_client``
hears the log, also where the CLI has quieted aiokafka, and prints nothing more."""

from __future__ import annotations

import logging

import pytest
from aiokafka.errors import KafkaConnectionError

from loopwarden.errors import BrokerUnavailableError
from loopwarden.streams.client.connect import start_client

AIOKAFKA = logging.getLogger("aiokafka")


class FailingClient:
    """A client whose start logs what aiokafka logs for ``reason``, then fails as it does."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        self.closed = False

    async def start(self) -> None:
        AIOKAFKA.error('Unable connect to "%s:%s": %s', "127.0.0.1", 9093, self.reason)
        raise KafkaConnectionError("Unable to bootstrap from [('127.0.0.1', 9093)]")

    async def close(self) -> None:
        self.closed = True


async def test_a_refused_login_is_named_with_the_settings_to_check():
    client = FailingClient("[Error 58] SaslAuthenticationFailed: invalid credentials")
    with pytest.raises(BrokerUnavailableError) as caught:
        await start_client(client, "127.0.0.1:9093")
    assert str(caught.value).startswith("the Kafka broker at 127.0.0.1:9093 refused")
    assert "SaslAuthenticationFailed" in str(caught.value)
    assert "LOOPWARDEN_KAFKA__SECURITY__" in str(caught.value)
    assert client.closed


async def test_nothing_answering_is_still_unreachable():
    client = FailingClient("[Errno 111] Connect call failed ('127.0.0.1', 9093)")
    with pytest.raises(BrokerUnavailableError, match="cannot reach a Kafka broker"):
        await start_client(client, "127.0.0.1:9093")


async def test_a_quieted_aiokafka_log_stays_quiet_and_keeps_its_level(caplog):
    AIOKAFKA.setLevel(logging.CRITICAL)  # as the CLI's client commands set it
    try:
        client = FailingClient("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
        with caplog.at_level(logging.DEBUG), pytest.raises(BrokerUnavailableError) as caught:
            await start_client(client, "127.0.0.1:9093")
        assert "CERTIFICATE_VERIFY_FAILED" in str(caught.value)  # heard
        assert not [r for r in caplog.records if r.name == "aiokafka"]  # not printed
        assert AIOKAFKA.level == logging.CRITICAL
        assert AIOKAFKA.filters == []
    finally:
        AIOKAFKA.setLevel(logging.NOTSET)
