"""Kafka connection security (``kafka.security``) as each client library takes it."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

from aiokafka.helpers import create_ssl_context

from loopwarden.errors import ConfigurationError
from loopwarden.settings.kafka_security import KafkaSecurity


def ssl_context(security: KafkaSecurity) -> ssl.SSLContext | None:
    """The TLS context of ``security`` (None without TLS); a missing file is named."""
    if security.protocol not in ("SSL", "SASL_SSL"):
        return None
    for name in ("ssl_cafile", "ssl_certfile", "ssl_keyfile"):
        path = getattr(security, name)
        if path is not None and not Path(path).is_file():
            raise ConfigurationError(
                f"kafka.security.{name} {path!r} is not a readable file "
                f"(LOOPWARDEN_KAFKA__SECURITY__{name.upper()})"
            )
    context = create_ssl_context(
        cafile=security.ssl_cafile,
        certfile=security.ssl_certfile,
        keyfile=security.ssl_keyfile,
        password=security.ssl_password.get_secret_value() if security.ssl_password else None,
    )
    context.check_hostname = security.ssl_check_hostname
    return context


def client_options(security: KafkaSecurity) -> dict[str, Any]:
    """Keyword arguments for aiokafka's producer, consumer and admin client."""
    options: dict[str, Any] = {"security_protocol": security.protocol}
    context = ssl_context(security)
    if context is not None:
        options["ssl_context"] = context
    if security.protocol.startswith("SASL_"):
        assert security.sasl_password is not None  # checked with the settings
        options.update(
            sasl_mechanism=security.sasl_mechanism,
            sasl_plain_username=security.sasl_username,
            sasl_plain_password=security.sasl_password.get_secret_value(),
        )
    return options


def faust_credentials(security: KafkaSecurity) -> Any:
    """The worker's ``broker_credentials`` (None for PLAINTEXT)."""
    import faust

    if security.protocol == "PLAINTEXT":
        return None
    context = ssl_context(security)
    if security.protocol == "SSL":
        return faust.SSLCredentials(context)
    assert security.sasl_password is not None
    return faust.SASLCredentials(
        username=security.sasl_username,
        password=security.sasl_password.get_secret_value(),
        ssl_context=context,
        mechanism=security.sasl_mechanism,
    )
