"""aiokafka logs an offset lookup it retries because a partition's leader is still being
elected (a topic just created on Apache Kafka) as an error: the README's tour, a plain
script with the client, printed eleven ``Failed fetch offsets from 1: [Error 6]
NotLeaderForPartitionError`` lines through Python's last-resort handler under its
warning (``make test-kafka``). The client keeps those retried lookups quiet; any other
error of the fetcher still shows."""

from __future__ import annotations

import logging
import threading

import pytest
from aiokafka.errors import (
    LeaderNotAvailableError,
    NotLeaderForPartitionError,
    TopicAuthorizationFailedError,
)

import loopwarden.streams.client.subscriber  # noqa: F401  (what a script imports)

FETCHER = logging.getLogger("aiokafka.consumer.fetcher")


class Kept(logging.Handler):
    """The lines the test's own thread logs: a guard another test of this process left
    running (the adapters' session fixture) fetches in a thread of its own, and at DEBUG
    its fetcher's lines reached this handler too (a red make test on a fresh clone)."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []
        self.thread = threading.get_ident()

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self.thread:
            self.messages.append(record.getMessage())


@pytest.fixture
def kept():
    """What reaches the fetcher's handlers, whatever level another test (the CLI quiets
    aiokafka for its client commands) left on its parent loggers."""
    handler = Kept()
    level, disabled = FETCHER.level, FETCHER.disabled
    FETCHER.setLevel(logging.DEBUG)
    FETCHER.disabled = False
    FETCHER.addHandler(handler)
    yield handler.messages
    FETCHER.removeHandler(handler)
    FETCHER.setLevel(level)
    FETCHER.disabled = disabled


@pytest.mark.parametrize("error", [NotLeaderForPartitionError(), LeaderNotAvailableError()])
def test_a_lookup_retried_for_a_leader_election_is_not_an_error_line(kept, error):
    FETCHER.error("Failed fetch offsets from %s: %s", 1, error)
    assert kept == []


def test_other_fetcher_errors_still_show(kept):
    FETCHER.error("Failed fetch offsets from %s: %s", 1, TopicAuthorizationFailedError())
    FETCHER.error("Unexpected error in fetcher routine")
    assert len(kept) == 2 and "TopicAuthorizationFailedError" in kept[0]


def test_a_fetcher_of_another_thread_is_not_counted(kept):
    other = threading.Thread(target=FETCHER.debug, args=("Adding fetch request for %s", "p0"))
    other.start()
    other.join()
    assert kept == []
