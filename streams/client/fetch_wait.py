"""A consumer's fetch wait that follows the traffic: short while records come, long while
the topic is quiet.

Tansu parks a fetch for its whole ``fetch_max_wait_ms`` (so loopwarden keeps it at
10 ms for low latency), but at 10 ms an idle consumer fetches 100 times a second. The
worker's stream consumer and every client subscriber (warnings, advice, outcomes, the
monitor's outage board) wait ``kafka.fetch_max_wait_ms`` after a fetch that brought
records, and twice as long after each empty one, up to ``kafka.idle_fetch_max_wait_ms``.
On Apache Kafka a waiting fetch returns as soon as records arrive, so the longer idle
wait costs no latency there; on Tansu the first record after a pause can wait about a
fifth of the current wait more.

aiokafka's fetch routine also wakes every ``consumer_timeout_ms`` (200 ms by default)
when nothing else woke it; loopwarden's consumers give it :data:`ROUTINE_TIMEOUT_MS`.
"""

from __future__ import annotations

from typing import Any

ROUTINE_TIMEOUT_MS = 1000
"""aiokafka's ``consumer_timeout_ms`` for loopwarden's consumers. Its fetch routine wakes
for every fetch that returns, every batch handed out, every seek, pause, resume or new
assignment; the timeout only adds wake-ups when none of those came, five a second per
idle consumer at aiokafka's 200 ms."""

GETMANY_TIMEOUT_MS = 2000
"""How long a subscriber's ``getmany`` waits for records: records or a stop end the wait
at once, so this only bounds how often an idle subscriber's loop turns."""


def fetch_wait_follows_traffic(fetcher: Any, busy_ms: int, idle_ms: int) -> None:
    """After each fetch, aiokafka's ``fetcher`` waits ``busy_ms`` in its next one when
    records came back, else twice as long as before, up to ``idle_ms``."""
    if idle_ms <= busy_ms:
        return
    process = fetcher._proc_fetch_request

    async def adapting(assignment: Any, node_id: Any, request: Any) -> bool:
        got_records = bool(await process(assignment, node_id, request))
        current = fetcher._fetch_max_wait_ms
        fetcher._fetch_max_wait_ms = busy_ms if got_records else min(idle_ms, current * 2)
        return got_records

    fetcher._proc_fetch_request = adapting
