"""One runner for every agent: read a record, hand it to the capability, apply one error policy.

Each agent (monitor, guardrails, analyst, memory) gives the runner a *handler*
that decodes a record, processes it and queues its outputs on the sink. The
runner decides what an exception means from the exception alone — its
``retriable`` and ``pauses`` (see :mod:`loopwarden.errors`), set where the failure
was understood — the same way for all of them:

- bad input never reaches here: handlers turn it into dead letters themselves
  (with the field paths), because only they know the contract;
- our own storage is away (:class:`~loopwarden.errors.StorageUnavailableError`)
  or our own output cannot be delivered: the partition **pauses** on the record
  and says so — a log line, ``/ready`` unready, the ``loopwarden.agent.paused``
  gauge — and tries it again with backoff until it works; nothing is committed
  past it and nothing is rejected for an outage;
- any other **retriable** failure (a timeout, a model endpoint, a retriable Kafka
  error) is retried with backoff at most ``errors.max_retries`` times, then the
  record takes the way below with reason ``retries_exhausted``;
- anything else is a bug or a poison value: by ``errors.on_processing_error``
  the record is dead-lettered with reason ``processing_error`` (default), skipped
  with a log line, or re-raised (the agent crashes and Faust restarts it).

Tracebacks and dead-letter lines are rate-limited, so a flood of bad records
costs a counter, not a log line each.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from enum import StrEnum
from typing import Any

from loopwarden.errors import is_retriable, pauses
from loopwarden.schemas.dead_letter import SourcePosition
from loopwarden.streams.runtime.backoff import Backoff
from loopwarden.streams.runtime.dead_letters import DeadLetters
from loopwarden.streams.runtime.records import Record
from loopwarden.streams.runtime.telemetry.metrics import WorkerMetrics

log = logging.getLogger(__name__)


class ErrorPolicy(StrEnum):
    """What the runner does with a record whose processing raised."""

    DEAD_LETTER = "dead_letter"
    SKIP = "skip"
    RAISE = "raise"


Handler = Callable[[Record], Awaitable[Any] | Any]
BatchHandler = Callable[[list[Record]], Awaitable[None] | None]


class AgentRunner:
    """Runs one agent's handler over its stream with the shared error policy."""

    def __init__(
        self,
        name: str,
        dead_letters: DeadLetters,
        *,
        policy: ErrorPolicy = ErrorPolicy.DEAD_LETTER,
        retry: Backoff | None = None,
        on_error: Callable[[], object] | None = None,
        flush_when_full: Callable[[], Awaitable[None] | None] | None = None,
        is_full: Callable[[], bool] | None = None,
        metrics: WorkerMetrics | None = None,
    ) -> None:
        self.name = name
        self.metrics = metrics
        self.dead_letters = dead_letters
        self.policy = policy
        self.retry = retry or Backoff()
        self.on_error = on_error
        self.flush_when_full = flush_when_full
        self.is_full = is_full
        """When given, ``flush_when_full`` is called only once it returns True."""
        self.processed = 0
        self.failed = 0
        self.retries = 0
        self.paused: str | None = None
        """Why the agent is paused on a record (our storage or output away), else None."""
        self.paused_since = 0.0
        self.messages = 0
        """Consumed messages (a bundle of records counts once)."""

    async def run(
        self,
        stream: Any,
        handle: Handler,
        after_message: Callable[[], None] | None = None,
    ) -> None:
        """Process every record of ``stream`` (a Faust stream) with ``handle``.

        A bundle's records are handled one by one, each under the error policy;
        ``after_message`` runs once the message's records are (e.g. to store the
        states they changed once). A handler may return the number of events a
        record held (else it counts as one) for the ``loopwarden.events`` metric.
        """
        metrics = self.metrics
        async for event in stream.events():
            self.messages += 1
            records = Record.all_of(event.message)
            started = time.perf_counter()
            events = 0
            for record in records:
                failed = self.failed
                result = await self._guarded(functools.partial(handle, record), [record])
                if self.failed == failed:
                    events += result if isinstance(result, int) else 1
                if len(records) > 1:
                    await self._after()  # a bundle's outputs are bounded like a record's
            if after_message is not None:
                await self._guarded(after_message, records, count=False)
            await self._after()
            if metrics is not None:  # once per message: per record cost 15 µs per event
                metrics.processed(self.name, time.perf_counter() - started)
                if events:
                    metrics.events(self.name, events)

    async def run_batches(self, batches: AsyncIterator[Any], handle: BatchHandler) -> None:
        """Process each batch of stream events (see ``take_events_bounded``) as one list
        of records under the error policy."""
        async for events in batches:
            self.messages += len(events)
            records = [record for event in events for record in Record.all_of(event.message)]
            started, failed = time.perf_counter(), self.failed
            await self._guarded(functools.partial(handle, records), records)
            await self._after()
            if self.metrics is not None:
                self.metrics.processed(self.name, time.perf_counter() - started)
                if self.failed == failed:
                    self.metrics.events(self.name, len(records))

    async def _after(self) -> None:
        if self.flush_when_full is None or (self.is_full is not None and not self.is_full()):
            return
        await self._guarded(self.flush_when_full, [], count=False)

    async def _guarded(
        self, call: Callable[[], Any], records: list[Record], count: bool = True
    ) -> Any:
        """``call()`` under the error policy; its result (None when it failed)."""
        attempt = 0
        while True:
            try:
                result = call()
                if inspect.isawaitable(result):
                    result = await result
            except Exception as exc:
                if self.on_error is not None and count:  # a record's handler, not a flush
                    self.on_error()
                attempt += 1
                # our storage away, or our own output not delivered: pause, say so, retry
                pause = pauses(exc) or (not records and is_retriable(exc))
                if pause or (is_retriable(exc) and not self.retry.gives_up(attempt)):
                    await self._wait(exc, records, attempt, pause)
                    continue
                if not records:
                    raise
                self._failed(exc, records, retried=attempt - 1)
                return None
            else:
                self._resumed(attempt)
                if count:
                    self.processed += len(records)
                return result

    async def _wait(self, exc: Exception, records: list[Record], attempt: int, pause: bool) -> None:
        """Say why the record waits, then wait before trying it again."""
        self.retries += 1
        delay = self.retry.delay(attempt)
        where = _where(records[0].source) if records else "output flush"
        if pause:
            if self.paused is None:
                self.paused_since = time.monotonic()
            self.paused = f"{_describe(exc)} (at {where})"
            if self.metrics is not None:
                self.metrics.paused(self.name, True)
            log.warning(
                "%s: paused at %s: %s; the record is kept, nothing is committed past it; "
                "retrying in %.1f s (attempt %d)",
                self.name,
                where,
                _describe(exc),
                delay,
                attempt,
            )
        else:
            log.warning(
                "%s: %s at %s; retrying in %.1f s (retry %d of %s)",
                self.name,
                _describe(exc),
                where,
                delay,
                attempt,
                self.retry.max_retries,
            )
        await asyncio.sleep(delay)

    def _resumed(self, retried: int) -> None:
        if not retried:
            return
        if self.paused is not None:
            log.warning(
                "%s: resumed after %.1f s paused (%d retries)",
                self.name,
                time.monotonic() - self.paused_since,
                retried,
            )
            self.paused = None
            if self.metrics is not None:
                self.metrics.paused(self.name, False)
        else:
            log.warning("%s: recovered after %d retries", self.name, retried)

    def _failed(self, exc: Exception, records: list[Record], retried: int = 0) -> None:
        self.failed += len(records)
        if self.policy is ErrorPolicy.RAISE:
            raise exc
        for record in records:
            if self.policy is ErrorPolicy.DEAD_LETTER:
                self.dead_letters.processing_error(exc, record, retried=retried)
            else:
                self.dead_letters.log_skipped(exc, record)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _where(source: SourcePosition) -> str:
    return f"{source.topic}[{source.partition}]@{source.offset}"
