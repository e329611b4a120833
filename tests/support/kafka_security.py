"""A SASL_SSL listener for a test Apache Kafka node: SCRAM-SHA-256 over TLS, on loopback.

The certificate is made here by ``openssl`` (self-signed, for 127.0.0.1 and localhost,
one day); the client trusts it as its CA file and checks the host name. The SCRAM
user is written into the node's metadata when its storage is formatted
(``--add-scram``), as an operator bootstraps a cluster's first credentials.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from loopwarden.errors import BrokerError
from loopwarden.settings import KafkaSecurity

LISTENER = "SASL_SSL"
MECHANISM = "SCRAM-SHA-256"


@dataclass
class SaslSslListener:
    """Where the listener is, its files and its one user."""

    folder: Path
    port: int
    username: str = "agent"
    password: str = "agent-secret-9f3c"

    @property
    def ca_file(self) -> Path:
        return self.folder / "ca.pem"

    @property
    def server_pem(self) -> Path:
        return self.folder / "server.pem"

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    def make_certificate(self) -> None:
        """A self-signed certificate and its key (PKCS#8, unencrypted) for loopback."""
        openssl = shutil.which("openssl")
        if openssl is None:
            raise BrokerError("the SASL_SSL test listener needs openssl on PATH")
        self.folder.mkdir(parents=True, exist_ok=True)
        key = self.folder / "server.key"
        command = [
            openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
            "-keyout", str(key), "-out", str(self.ca_file),
        ]  # fmt: skip
        result = subprocess.run(command, capture_output=True, text=True, timeout=60)
        if result.returncode != 0:
            raise BrokerError(f"openssl could not make the test certificate:\n{result.stderr}")
        self.server_pem.write_text(key.read_text() + self.ca_file.read_text())

    def broker_config(self) -> dict[str, str]:
        """The listener's settings (its address goes in ``listeners`` beside the others)."""
        prefix = f"listener.name.{LISTENER.lower()}"
        return {
            "sasl.enabled.mechanisms": MECHANISM,
            f"{prefix}.{MECHANISM.lower()}.sasl.jaas.config": (
                "org.apache.kafka.common.security.scram.ScramLoginModule required;"
            ),
            f"{prefix}.ssl.keystore.type": "PEM",
            f"{prefix}.ssl.keystore.location": str(self.server_pem),
        }

    def format_args(self) -> list[str]:
        """``kafka-storage format`` arguments that create the user."""
        return [f"--add-scram={MECHANISM}=[name={self.username},password={self.password}]"]

    def client_security(self, password: str | None = None) -> KafkaSecurity:
        """What a loopwarden client sets to connect (``password``: another, to be refused)."""
        return KafkaSecurity(
            protocol=LISTENER,
            ssl_cafile=str(self.ca_file),
            sasl_mechanism=MECHANISM,
            sasl_username=self.username,
            sasl_password=password or self.password,
        )
