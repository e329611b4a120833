"""Kafka connection security: TLS and SASL (PLAIN, SCRAM) for every client loopwarden starts."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator


class KafkaSecurity(BaseModel):
    """How every client (worker, publisher, subscribers, CLI, topic admin) connects.

    ``LOOPWARDEN_KAFKA__SECURITY__PROTOCOL=SASL_SSL``,
    ``LOOPWARDEN_KAFKA__SECURITY__SASL_MECHANISM=SCRAM-SHA-512``, … An incomplete
    combination is refused when the settings are read, naming what is missing.
    """

    model_config = ConfigDict(frozen=True)

    protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = Field(
        "PLAINTEXT", description="Kafka's security.protocol."
    )
    ssl_cafile: str | None = Field(
        None,
        description="CA bundle (PEM) that signed the brokers' certificates (default: the "
        "system's CAs).",
    )
    ssl_certfile: str | None = Field(None, description="Client certificate (PEM), for mTLS.")
    ssl_keyfile: str | None = Field(None, description="The client certificate's key (PEM).")
    ssl_password: SecretStr | None = Field(None, description="Password of the key file.")
    ssl_check_hostname: bool = Field(
        True, description="Check that a broker's certificate names the host connected to."
    )
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] | None = None
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None

    @model_validator(mode="after")
    def _complete(self) -> KafkaSecurity:
        uses_tls = self.protocol in ("SSL", "SASL_SSL")
        uses_sasl = self.protocol.startswith("SASL_")
        problems = []
        tls_files = [self.ssl_cafile, self.ssl_certfile, self.ssl_keyfile, self.ssl_password]
        if not uses_tls and any(value is not None for value in tls_files):
            problems.append("ssl_* settings need protocol SSL or SASL_SSL")
        if (self.ssl_certfile is None) != (self.ssl_keyfile is None):
            problems.append("ssl_certfile and ssl_keyfile go together (client certificate)")
        sasl = {
            "sasl_mechanism": self.sasl_mechanism,
            "sasl_username": self.sasl_username,
            "sasl_password": self.sasl_password,
        }
        if uses_sasl:
            missing = [name for name, value in sasl.items() if value is None]
            if missing:
                problems.append(f"protocol {self.protocol} needs {', '.join(missing)}")
        elif any(value is not None for value in sasl.values()):
            problems.append("sasl_* settings need protocol SASL_PLAINTEXT or SASL_SSL")
        if problems:
            raise ValueError("incomplete Kafka security settings: " + "; ".join(problems))
        return self
