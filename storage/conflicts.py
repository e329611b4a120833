"""Retrying a LanceDB operation that lost a commit race.

Every LanceDB write (append, update, merge, index build, compaction) commits a
new table version. When another writer — a thread of this worker, another
worker, ``loopwarden memory import`` — committed an incompatible change first,
Lance refuses with a *retryable commit conflict*: the operation had no effect,
and running it again against the newer version is the documented remedy. Each
operation retried here is whole on its own (an update, a merge by id, an
append of ids just found missing), so running it again applies it once.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

CONFLICT_ATTEMPTS = 8


def is_commit_conflict(exc: BaseException) -> bool:
    """True for Lance's 'Retryable commit conflict' (another writer committed first)."""
    return "commit conflict" in str(exc).lower()


def retry_on_conflict(
    operation: Callable[[], T], what: str, attempts: int = CONFLICT_ATTEMPTS
) -> T:
    """Run ``operation``; after a commit conflict run it again (jittered backoff from
    20 ms, doubling, at most ``attempts`` times); any other error is raised at once."""
    for attempt in range(1, attempts + 1):
        try:
            return operation()
        except Exception as exc:
            if attempt == attempts or not is_commit_conflict(exc):
                raise
            delay = min(0.02 * 2 ** (attempt - 1), 1.0) * random.uniform(0.5, 1.0)
            log.info("memory store: %s lost a commit race; again in %.2f s", what, delay)
            time.sleep(delay)
    raise AssertionError("unreachable")
