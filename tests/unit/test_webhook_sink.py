"""The example output sink against a real loopback HTTP server (aiohttp)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from loopback_http import ScriptedEndpoint, serving_post
from pydantic import ValidationError

from loopwarden.settings.outputs import WebhookSettings
from loopwarden.streams.runtime.webhook_sink import WebhookSink
from loopwarden.streams.tools.broker import free_port


@contextlib.asynccontextmanager
async def serving(endpoint: ScriptedEndpoint) -> AsyncIterator[str]:
    async with serving_post("/hook", endpoint.handle) as base:
        yield f"{base}/hook"


@contextlib.asynccontextmanager
async def running(sink: WebhookSink) -> AsyncIterator[WebhookSink]:
    task = asyncio.create_task(sink.run())
    try:
        yield sink
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def settings(url: str, **changes: Any) -> WebhookSettings:
    return WebhookSettings(url=url, retry_initial_s=0.01, **changes)


async def test_outputs_are_posted_in_order_in_batches():
    endpoint = ScriptedEndpoint()
    async with serving(endpoint) as url:
        sink = WebhookSink(settings(url, max_batch=2, outputs={"warnings", "advice"}))
        for n in range(3):
            sink.deliver("warnings", {"n": n})
        async with running(sink):
            await asyncio.wait_for(sink.idle.wait(), 10)
    posted = [o for body in endpoint.received for o in body["outputs"]]
    assert posted == [{"output": "warnings", "value": {"n": n}} for n in range(3)]
    assert [len(body["outputs"]) for body in endpoint.received] == [2, 1]
    assert sink.delivered == 3 and not sink.dropped


async def test_a_server_error_is_retried_until_it_is_taken():
    endpoint = ScriptedEndpoint(500, 429)
    async with serving(endpoint) as url:
        sink = WebhookSink(settings(url))
        sink.deliver("warnings", {"n": 1})
        async with running(sink):
            await asyncio.wait_for(sink.idle.wait(), 10)
    assert endpoint.answered == [500, 429, 200]
    assert sink.delivered == 1 and not sink.dropped


async def test_a_client_error_drops_the_batch_and_says_so(caplog):
    endpoint = ScriptedEndpoint(400)
    async with serving(endpoint) as url:
        sink = WebhookSink(settings(url))
        sink.deliver("warnings", {"n": 1})
        async with running(sink):
            await asyncio.wait_for(sink.idle.wait(), 10)
    assert endpoint.answered == [400]
    assert sink.dropped == {"rejected": 1} and sink.delivered == 0
    assert "HTTP 400: nope" in caplog.text


async def test_an_endpoint_that_is_down_exhausts_the_retries(caplog):
    url = f"http://127.0.0.1:{free_port()}/hook"  # nobody listens
    sink = WebhookSink(settings(url, max_retries=2))
    sink.deliver("warnings", {"n": 1})
    async with running(sink):
        await asyncio.wait_for(sink.idle.wait(), 10)
    assert sink.dropped == {"retries_exhausted": 1}
    assert "ConnectError" in caplog.text and "2 retries" in caplog.text


async def test_a_full_queue_drops_the_newest_and_counts_it():
    sink = WebhookSink(settings("http://127.0.0.1:9/hook", max_queue=2))
    for n in range(3):
        sink.deliver("warnings", {"n": n})
    assert sink.dropped == {"queue_full": 1}
    assert sink.queue.qsize() == 2


def test_the_url_must_be_http():
    with pytest.raises(ValidationError, match="must start with http:// or https://"):
        WebhookSettings(url="ftp://example.com/hook")
