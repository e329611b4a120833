"""An :class:`~loopwarden.streams.runtime.outputs.OutputSink` that POSTs outputs to a webhook.

The example sink of the output router (``LOOPWARDEN_WEBHOOK__URL``): each POST
carries a JSON body ``{"outputs": [{"output": "warnings", "value": {…}}, …]}`` of
at most ``max_batch`` outputs, in the order they were produced. The worker never
waits for it: :meth:`WebhookSink.deliver` queues, :meth:`WebhookSink.run` (a
worker task) sends. A POST that fails with a timeout, a refused connection, 408,
429 or 5xx is retried with backoff ``max_retries`` times; any other answer, or
the last failure, drops the batch — counted in ``dropped`` and said in a log
line, never silent. The Kafka record of each output is unaffected either way.

httpx, not a hand-written client: timeouts, connection reuse and TLS come with it.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from typing import Any

import httpx

from loopwarden.schemas import codec
from loopwarden.settings import Settings
from loopwarden.settings.outputs import WebhookSettings
from loopwarden.streams.runtime.backoff import Backoff
from loopwarden.streams.runtime.dead_letters import RateLimitedLog

log = logging.getLogger(__name__)
RETRIABLE_STATUSES = frozenset({408, 429}) | frozenset(range(500, 600))


class WebhookSink:
    """Queues named outputs and POSTs them in batches to ``settings.url``."""

    def __init__(
        self, settings: WebhookSettings, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        if settings.url is None:
            raise ValueError("a webhook sink needs settings.url")
        self.settings = settings
        self.url = settings.url
        self.outputs = frozenset(settings.outputs)
        self.backoff = Backoff(settings.retry_initial_s, 30.0, settings.max_retries)
        self._queue: asyncio.Queue[tuple[str, Any]] | None = None
        self._transport = transport
        self._log = RateLimitedLog(log, burst=5)
        self.delivered = 0
        self.dropped: Counter[str] = Counter()
        """Outputs not delivered, by reason (queue_full, rejected, retries_exhausted, stopped)."""
        self.idle = asyncio.Event()
        """Set while nothing is queued or being sent."""
        self.idle.set()

    @property
    def queue(self) -> asyncio.Queue[tuple[str, Any]]:
        if self._queue is None:  # made on first use, in the worker's event loop
            self._queue = asyncio.Queue(self.settings.max_queue)
        return self._queue

    def deliver(self, output: str, value: Any) -> None:
        """Queue one output; when the queue is full it is dropped and counted."""
        try:
            self.queue.put_nowait((output, value))
            self.idle.clear()
        except asyncio.QueueFull:
            self._drop("queue_full", 1, f"queue full ({self.settings.max_queue} waiting)")

    async def run(self) -> None:
        """Send queued outputs until cancelled (a worker task)."""
        headers = {"content-type": "application/json"}
        if self.settings.token is not None:
            headers["authorization"] = f"Bearer {self.settings.token.get_secret_value()}"
        queue = self.queue
        async with httpx.AsyncClient(
            timeout=self.settings.timeout_s, headers=headers, transport=self._transport
        ) as client:
            try:
                while True:
                    batch = [await queue.get()]
                    while len(batch) < self.settings.max_batch and not queue.empty():
                        batch.append(queue.get_nowait())
                    await self._post(client, batch)
                    if queue.empty():
                        self.idle.set()
            finally:
                left = queue.qsize()
                if left:
                    self._drop("stopped", left, "the worker stopped before they were sent")

    async def _post(self, client: httpx.AsyncClient, batch: list[tuple[str, Any]]) -> None:
        body = codec.dumps({"outputs": [{"output": o, "value": v} for o, v in batch]})
        attempt = 0
        while True:
            problem = await self._attempt(client, body)
            if problem is None:
                self.delivered += len(batch)
                return
            retriable, reason = problem
            attempt += 1
            if not retriable:
                self._drop("rejected", len(batch), reason)
                return
            if self.backoff.gives_up(attempt):
                self._drop("retries_exhausted", len(batch), f"{reason}, {attempt - 1} retries")
                return
            await asyncio.sleep(self.backoff.delay(attempt))

    async def _attempt(self, client: httpx.AsyncClient, body: bytes) -> tuple[bool, str] | None:
        """None when delivered, else (retriable, what happened)."""
        try:
            response = await client.post(self.url, content=body)
        except httpx.TransportError as exc:
            return True, f"{type(exc).__name__}: {exc}"
        if response.is_success:
            return None
        status = response.status_code
        return status in RETRIABLE_STATUSES, f"HTTP {status}: {response.text[:200]}"

    def _drop(self, reason: str, count: int, why: str) -> None:
        self.dropped[reason] += count
        if self._log.allow(f"webhook {reason}"):
            log.warning(
                "webhook %s: %d output(s) dropped (%s); %d dropped so far",
                self.url,
                count,
                why,
                sum(self.dropped.values()),
            )


def webhook_from_settings(settings: Settings) -> WebhookSink | None:
    """The webhook sink ``LOOPWARDEN_WEBHOOK__URL`` asks for (None: no url)."""
    return WebhookSink(settings.webhook) if settings.webhook.url is not None else None
