"""Kafka connection security settings: complete or refused, and what each client gets."""

from __future__ import annotations

import re
import ssl
import subprocess

import faust
import pytest
from pydantic import ValidationError

from loopwarden.errors import ConfigurationError
from loopwarden.settings import KafkaSecurity, Settings
from loopwarden.streams.client.security import client_options, faust_credentials
from loopwarden.streams.runtime.app import create_app


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory):
    """A CA-signed-looking self-signed certificate and its key (PEM)."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "client.pem", folder / "client.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=loopwarden-test", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"protocol": "SASL_SSL"}, "needs sasl_mechanism, sasl_username, sasl_password"),
        ({"protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN", "sasl_username": "u"},
         "needs sasl_password"),
        ({"sasl_username": "u"}, "sasl_* settings need protocol SASL_PLAINTEXT or SASL_SSL"),
        ({"ssl_cafile": "/ca.pem"}, "ssl_* settings need protocol SSL or SASL_SSL"),
        ({"protocol": "SSL", "ssl_certfile": "/c.pem"}, "ssl_certfile and ssl_keyfile go together"),
    ],
)  # fmt: skip
def test_incomplete_security_is_refused_naming_what_is_missing(fields, message):
    with pytest.raises(ValidationError, match=re.escape(message)):
        KafkaSecurity(**fields)


def test_security_is_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("LOOPWARDEN_KAFKA__SECURITY__PROTOCOL", "SASL_PLAINTEXT")
    monkeypatch.setenv("LOOPWARDEN_KAFKA__SECURITY__SASL_MECHANISM", "SCRAM-SHA-512")
    monkeypatch.setenv("LOOPWARDEN_KAFKA__SECURITY__SASL_USERNAME", "agent")
    monkeypatch.setenv("LOOPWARDEN_KAFKA__SECURITY__SASL_PASSWORD", "s3cret")
    security = Settings().kafka.security
    assert client_options(security) == {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "agent",
        "sasl_plain_password": "s3cret",
    }
    credentials = faust_credentials(security)
    assert isinstance(credentials, faust.SASLCredentials)
    assert credentials.mechanism.value == "SCRAM-SHA-512"
    assert credentials.protocol.value == "SASL_PLAINTEXT"
    monkeypatch.setenv("LOOPWARDEN_KAFKA__SECURITY__SASL_MECHANISM", "MAGIC")
    with pytest.raises(ValidationError, match="sasl_mechanism"):
        Settings()


def test_tls_with_a_client_certificate_reaches_every_client(tls_files):
    cert, key = tls_files
    security = KafkaSecurity(
        protocol="SASL_SSL",
        ssl_cafile=str(cert),
        ssl_certfile=str(cert),
        ssl_keyfile=str(key),
        sasl_mechanism="PLAIN",
        sasl_username="agent",
        sasl_password="pw",
    )
    options = client_options(security)
    assert options["security_protocol"] == "SASL_SSL"
    assert isinstance(options["ssl_context"], ssl.SSLContext)
    assert options["ssl_context"].check_hostname
    credentials = faust_credentials(security)
    assert credentials.protocol.value == "SASL_SSL"
    assert isinstance(credentials.ssl_context, ssl.SSLContext)
    # the worker's Faust app is configured with them
    settings = Settings().model_copy(
        update={"kafka": Settings().kafka.model_copy(update={"security": security})}
    )
    assert create_app(settings).conf.broker_credentials.username == "agent"


def test_a_missing_certificate_file_is_named(tmp_path):
    security = KafkaSecurity(protocol="SSL", ssl_cafile=str(tmp_path / "nope.pem"))
    with pytest.raises(ConfigurationError, match=r"kafka\.security\.ssl_cafile .*nope\.pem"):
        client_options(security)


def test_plaintext_is_the_default_and_adds_nothing():
    security = Settings().kafka.security
    assert client_options(security) == {"security_protocol": "PLAINTEXT"}
    assert faust_credentials(security) is None
