"""Starting a Kafka client, with one clear error when nothing answers.

aiokafka raises ``KafkaConnectionError("Unable to bootstrap from …")``; every
client loopwarden starts (publisher, subscribers, topic admin) turns it into a
:class:`~loopwarden.errors.BrokerUnavailableError` (or the given subclass) that
names the servers and how to point loopwarden elsewhere.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

from aiokafka.errors import (
    KafkaConnectionError,
    LeaderNotAvailableError,
    NotLeaderForPartitionError,
)

from loopwarden.errors import BrokerUnavailableError

REFUSALS = ("Authentication", "SASL", "SSL", "certificate", "Unsupported", "handshake")
"""Words of a connection error that a broker answered (credentials, TLS), as opposed to
nothing answering."""


def unreachable_message(bootstrap_servers: str) -> str:
    """What to tell someone whose broker does not answer."""
    return (
        f"cannot reach a Kafka broker at {bootstrap_servers}: start `loopwarden dev` (a broker "
        "and a worker on this machine: warnings need both) or point loopwarden at yours "
        "(--bootstrap-servers or LOOPWARDEN_KAFKA__BOOTSTRAP_SERVERS)"
    )


def refused_message(bootstrap_servers: str, reason: str) -> str:
    """What to tell someone whose broker answered and refused the connection."""
    return (
        f"the Kafka broker at {bootstrap_servers} refused the connection: {reason}; check "
        "LOOPWARDEN_KAFKA__SECURITY__* (protocol, SASL mechanism and credentials, CA file)"
    )


class _ConnectionErrors(logging.Filter):
    """Keeps the reasons aiokafka logs (and does not raise) for each failed bootstrap;
    passes on only the records its logger would have shown anyway."""

    def __init__(self, shown_from: int) -> None:
        super().__init__()
        self.shown_from = shown_from
        self.reasons: list[str] = []

    def filter(self, record: logging.LogRecord) -> bool:
        if str(record.msg).startswith("Unable connect to") and record.args:
            self.reasons.append(str(record.args[-1]))  # type: ignore[index]
        return record.levelno >= self.shown_from


class _RetriedLeaderLookups(logging.Filter):
    """Drops aiokafka's error record for an offset lookup it retries because the
    partition's leader is being elected (a topic just created): handled, not an error.
    Every other record of its fetcher passes."""

    RETRIED = (NotLeaderForPartitionError, LeaderNotAvailableError)

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        retried = bool(args) and isinstance(args[-1], self.RETRIED)
        return not (retried and str(record.msg).startswith("Failed fetch offsets"))


_FETCHER_LOG = logging.getLogger("aiokafka.consumer.fetcher")


def quiet_retried_leader_lookups() -> None:
    """Keep aiokafka's retried offset lookups during a leader election out of the
    caller's log (a script without logging set up printed one line per retry)."""
    if not any(isinstance(f, _RetriedLeaderLookups) for f in _FETCHER_LOG.filters):
        _FETCHER_LOG.addFilter(_RetriedLeaderLookups())


quiet_retried_leader_lookups()  # every client loopwarden starts comes through here

_AIOKAFKA_LOG = logging.getLogger("aiokafka")  # aiokafka.client logs on this one
_listening: list[int] = []  # the level to restore, while some client starts


@contextlib.contextmanager
def _connection_errors() -> Iterator[_ConnectionErrors]:
    """Hear aiokafka's connection errors even where its log is quieted (the CLI's)."""
    if not _listening:
        _listening.append(_AIOKAFKA_LOG.level)
    shown_from = max(_AIOKAFKA_LOG.getEffectiveLevel(), logging.ERROR)
    errors = _ConnectionErrors(shown_from)
    _AIOKAFKA_LOG.addFilter(errors)
    _AIOKAFKA_LOG.setLevel(min(_AIOKAFKA_LOG.getEffectiveLevel(), logging.ERROR))
    try:
        yield errors
    finally:
        _AIOKAFKA_LOG.removeFilter(errors)
        if not any(isinstance(f, _ConnectionErrors) for f in _AIOKAFKA_LOG.filters):
            _AIOKAFKA_LOG.setLevel(_listening.pop())


async def start_client(
    client: Any,
    bootstrap_servers: str,
    error: type[BrokerUnavailableError] = BrokerUnavailableError,
) -> None:
    """``await client.start()``; a broker that cannot be reached raises ``error``, saying
    whether nothing answered or a broker refused the credentials or the TLS handshake
    (aiokafka only logs that reason; its exception says "Unable to bootstrap")."""
    with _connection_errors() as seen:
        try:
            await client.start()
        except KafkaConnectionError as exc:
            close = getattr(client, "stop", None) or getattr(client, "close", None)
            if close is not None:
                await close()
            refusals = [r for r in seen.reasons if any(word in r for word in REFUSALS)]
            if refusals:
                raise error(refused_message(bootstrap_servers, refusals[-1])) from exc
            raise error(unreachable_message(bootstrap_servers)) from exc


async def topic_partitions(consumer: Any, topic: str) -> set[int]:
    """The partitions of ``topic`` as the broker describes them now (empty: no topic).

    Asked in a metadata request of its own for every topic. ``consumer.topics()``
    does that too but keeps the answer apart from the metadata the consumer's
    ``partitions_for_topic`` reads, which until its first refresh is the answer to its
    bootstrap request: that request names no topic, and Apache Kafka answers it with
    none (the embedded broker with all, which hid this).
    """
    cluster = await consumer._client.fetch_all_metadata()
    return set(cluster.partitions_for_topic(topic) or ())
