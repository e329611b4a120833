"""The client SDK's Kafka producer: durable by default (acks=all, idempotent).

``publisher.idempotence=auto`` asks for an idempotent producer and, on a broker
that refuses InitProducerId (the embedded Tansu answers UnknownError), falls
back to a plain one with a single warning per broker and process — an INFO line
when the broker is on loopback (a development broker, such as loopwarden's own
embedded one: nothing for the user to act on). Events carry ids, so a duplicate from
a client retry is skipped by the worker either way.
"""

from __future__ import annotations

import ipaddress
import logging

from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError, UnknownError, UnsupportedVersionError

from loopwarden.errors import PublisherUnavailableError
from loopwarden.settings import KafkaSecurity, PublisherSettings
from loopwarden.streams.client.connect import start_client
from loopwarden.streams.client.security import client_options

log = logging.getLogger(__name__)

_REFUSED_IDEMPOTENCE: set[str] = set()


def on_loopback(bootstrap_servers: str) -> bool:
    """Every bootstrap server is on this machine's loopback (a development broker)."""
    for server in bootstrap_servers.split(","):
        host = server.strip().rsplit(":", 1)[0].strip("[]")
        if host == "localhost":
            continue
        try:
            if not ipaddress.ip_address(host).is_loopback:
                return False
        except ValueError:
            return False
    return True


class _QuietInitProducerId(logging.Filter):
    """aiokafka logs a broker's refusal of idempotence as an error; auto mode handles it."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "InitProducerId" not in record.getMessage()


async def start_producer(
    bootstrap_servers: str, cfg: PublisherSettings, security: KafkaSecurity | None = None
) -> AIOKafkaProducer:
    """A started producer with the publisher's durability settings."""
    acks: int | str = "all" if cfg.acks == "all" else int(cfg.acks)
    auto = cfg.idempotence == "auto"
    idempotent = cfg.idempotence != "off" and acks == "all"
    if auto and bootstrap_servers in _REFUSED_IDEMPOTENCE:
        idempotent = False
    sender_log = logging.getLogger("aiokafka.producer.sender")
    while True:
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap_servers,
            linger_ms=1,
            max_batch_size=256 * 1024,
            max_request_size=4 * 1024 * 1024,
            acks=acks,
            enable_idempotence=idempotent,
            **client_options(security or KafkaSecurity()),
        )
        quiet = _QuietInitProducerId() if auto else None
        if quiet is not None:
            sender_log.addFilter(quiet)  # the refusal is expected in auto mode
        try:
            await start_client(producer, bootstrap_servers, PublisherUnavailableError)
            return producer
        except KafkaError as exc:
            await producer.stop()
            refused = isinstance(exc, UnknownError | UnsupportedVersionError)
            if not (idempotent and auto and refused):
                raise
            _REFUSED_IDEMPOTENCE.add(bootstrap_servers)
            log.log(
                logging.INFO if on_loopback(bootstrap_servers) else logging.WARNING,
                "%s does not support idempotent producers (%s); publishing without "
                "(LOOPWARDEN_PUBLISHER__IDEMPOTENCE=off silences this)",
                bootstrap_servers,
                type(exc).__name__,
            )
            idempotent = False
        finally:
            if quiet is not None:
                sender_log.removeFilter(quiet)
