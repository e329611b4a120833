"""``loopwarden gateway``'s HTTP side: a Starlette app that forwards every request to its
upstream model API, watching the three it speaks.

Starlette (with uvicorn) rather than Faust's aiohttp web: the gateway is a client-side
process with no Faust app; Starlette's streaming responses pass a server-sent stream
through chunk by chunk, and httpx (already the webhook sink's client) streams the
upstream's answer the same way. Nothing is buffered but a non-streamed answer.

- ``POST …/chat/completions``, ``POST …/responses``, ``POST …/messages``: the request's
  steps published, the verdict awaited (:mod:`.watch`), then the answer in the model's
  place (a stop), or the request forwarded with the loop's note, or as it was.
- Anything else (``GET /v1/models``, ``/v1/messages/count_tokens`` …): forwarded as it is.
- A request it cannot read, or a failure of its own while watching, is forwarded
  unchanged, counted, and logged once per kind: the gateway never breaks the agent.
- ``GET /loopwarden/gateway``: its counters (JSON), never forwarded.

The client's own credentials (``Authorization``, ``x-api-key``) go to the upstream and
nowhere else: not logged, not published.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import orjson
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from loopwarden.adapters.guard import LoopGuard
from loopwarden.gateway.anthropic_messages import AnthropicMessages
from loopwarden.gateway.loops import LoopBook
from loopwarden.gateway.openai_chat import OpenAIChat
from loopwarden.gateway.openai_responses import OpenAIResponses
from loopwarden.gateway.steps import Dialect, JsonBody, Usage, merge_usage
from loopwarden.gateway.watch import Watcher
from loopwarden.settings import Settings

log = logging.getLogger("loopwarden.gateway")

DIALECTS: tuple[tuple[str, Dialect], ...] = (
    ("/chat/completions", OpenAIChat()),
    ("/responses", OpenAIResponses()),
    ("/messages", AnthropicMessages()),
)
"""Path ending → the dialect of a ``POST`` to it."""
HOP_BY_HOP = frozenset(
    {
        "host",
        "content-length",
        "connection",
        "keep-alive",
        "transfer-encoding",
        "te",
        "upgrade",
        "proxy-authorization",
        "proxy-connection",
        "accept-encoding",
    }
)
"""Request headers not forwarded (``accept-encoding``: the upstream answers uncompressed,
so the gateway can read a stream's usage as it passes)."""
ANSWER_DROPPED = frozenset({"content-length", "connection", "transfer-encoding", "keep-alive"})
STATUS_PATH = "/loopwarden/gateway"


def dialect_of(method: str, path: str) -> Dialect | None:
    """The dialect the gateway watches a request in (None: forwarded as it is)."""
    if method != "POST":
        return None
    return next((dialect for end, dialect in DIALECTS if path.endswith(end)), None)


def upstream_url(settings: Settings, path: str, query: str, headers: Any) -> str:
    """Where a request goes: Anthropic for ``/v1/messages…`` or an ``anthropic-version``
    header (the path kept), else the OpenAI-compatible base (``/v1`` is the base's)."""
    gateway = settings.gateway
    if path.startswith("/v1/messages") or "anthropic-version" in headers:
        url = gateway.anthropic_base_url.rstrip("/") + path
    else:
        url = gateway.openai_base_url.rstrip("/") + (path.removeprefix("/v1") or "/")
    return f"{url}?{query}" if query else url


@dataclass(frozen=True, slots=True)
class Watched:
    """A forwarded request that was watched: its answer's usage goes to its conversation."""

    dialect: Dialect
    conversation: str


class Gateway:
    """The gateway's state: its guard, its conversations, its upstream client, counters."""

    def __init__(self, settings: Settings, guard: LoopGuard) -> None:
        self.settings = settings
        self.guard = guard
        cfg = settings.gateway
        self.watcher = Watcher(guard, LoopBook(cfg.max_loops, cfg.loop_ttl_s))
        self.client = httpx.AsyncClient(timeout=httpx.Timeout(cfg.upstream_timeout_s, connect=10.0))
        self.counts: Counter[str] = Counter()
        self._said: set[str] = set()

    def once(self, kind: str, message: str, *args: Any) -> None:
        """Count ``kind``; log ``message`` the first time only."""
        self.counts[kind] += 1
        if kind not in self._said:
            self._said.add(kind)
            log.warning(
                "loopwarden gateway: " + message + " (counted as %s from now on)", *args, kind
            )

    async def handle(self, request: Request) -> Response:
        path, method = request.url.path, request.method
        if path == STATUS_PATH and method == "GET":
            return JSONResponse({"counts": dict(self.counts), "broker": self.guard.ready})
        self.counts["requests"] += 1
        body = await request.body()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
        dialect = dialect_of(method, path)
        watched: Watched | None = None
        if dialect is not None:
            answer, body, watched = await self._watched(dialect, body, request)
            if answer is not None:
                return answer
        url = upstream_url(self.settings, path, request.url.query, request.headers)
        return await self._forward(method, url, headers, body, watched)

    async def _watched(
        self, dialect: Dialect, body: bytes, request: Request
    ) -> tuple[Response | None, bytes, Watched | None]:
        """(the answer in the model's place or None, the bytes to forward, what the
        answer's usage is read for: None when the request was not watched)."""
        try:
            parsed = orjson.loads(body)
            if not isinstance(parsed, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:
            self.once(
                "unreadable",
                "a %s request it could not read is forwarded unchanged: %s",
                dialect.name,
                exc,
            )
            return None, body, None
        if not self.guard.ready:
            self.once("unwatched", "no broker: requests are forwarded unwatched, steps queued")
        try:
            decision = await self.watcher.decide(dialect, parsed, request.headers)
        except Exception as exc:  # the agent is never broken by the gateway's own failure
            self.once("failed", "watching a request failed, forwarded unchanged: %r", exc)
            return None, body, None
        self.counts["watched"] += 1
        if decision.stop is not None:
            self.counts["stopped"] += 1
            log.info(
                "loopwarden gateway: loop %s stopped, answered in the model's place",
                decision.loop_id,
            )
            return self._stop_answer(dialect, parsed, decision.stop), b"", None
        watched = Watched(dialect, decision.conversation)
        if decision.note is None:
            return None, body, watched
        self.counts["noted"] += 1
        return None, orjson.dumps(dialect.with_note(parsed, decision.note)), watched

    @staticmethod
    def _stop_answer(dialect: Dialect, body: JsonBody, text: str) -> Response:
        if body.get("stream"):
            events = dialect.stop_events(body, text)

            async def stream() -> AsyncIterator[bytes]:
                for event in events:
                    yield event

            return StreamingResponse(stream(), media_type="text/event-stream")
        return Response(orjson.dumps(dialect.stop_json(body, text)), media_type="application/json")

    async def _forward(
        self, method: str, url: str, headers: dict[str, str], body: bytes, watched: Watched | None
    ) -> Response:
        outgoing = self.client.build_request(method, url, headers=headers, content=body)
        try:
            upstream = await self.client.send(outgoing, stream=True)
        except httpx.HTTPError as exc:
            self.once(
                "upstream_unreachable",
                "the upstream %s did not answer: %s",
                outgoing.url.host,
                type(exc).__name__,
            )
            message = f"loopwarden gateway: the upstream did not answer ({type(exc).__name__})"
            return JSONResponse(
                {"error": {"type": "upstream_unreachable", "message": message}}, status_code=502
            )
        answer_headers = {
            k: v for k, v in upstream.headers.items() if k.lower() not in ANSWER_DROPPED
        }
        if not upstream.is_success:
            watched = None  # an error answer reports no usage
        if upstream.headers.get("content-type", "").startswith("text/event-stream"):
            chunks = upstream.aiter_raw() if watched is None else self._passing(upstream, watched)
            return StreamingResponse(
                chunks,
                status_code=upstream.status_code,
                headers=answer_headers,
                background=BackgroundTask(upstream.aclose),
            )
        content = await upstream.aread()
        await upstream.aclose()
        if watched is not None:
            try:
                usage = watched.dialect.usage(orjson.loads(content))
            except (ValueError, AttributeError):
                usage = {}
            self.watcher.answered(watched.conversation, usage)
        return Response(content, status_code=upstream.status_code, headers=answer_headers)

    async def _passing(self, upstream: httpx.Response, watched: Watched) -> AsyncIterator[bytes]:
        """The upstream's stream, chunk by chunk as it comes, its usage read on the way."""
        usage: Usage = {}
        pending = b""
        async for chunk in upstream.aiter_raw():
            yield chunk
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if line.startswith(b"data:") and b"usage" in line:
                    try:
                        merge_usage(usage, watched.dialect.usage(orjson.loads(line[5:])))
                    except (ValueError, AttributeError):
                        continue
        self.watcher.answered(watched.conversation, usage)

    async def close(self) -> None:
        await self.client.aclose()


def create_app(settings: Settings, guard: LoopGuard | None = None) -> Starlette:
    """The gateway's ASGI app (its guard started with it, closed on shutdown)."""
    guard = guard or LoopGuard(settings)
    gateway = Gateway(settings, guard)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        guard.start()
        try:
            yield
        finally:
            await gateway.close()
            await asyncio.to_thread(guard.close)

    methods = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
    app = Starlette(
        routes=[Route("/{path:path}", gateway.handle, methods=methods)], lifespan=lifespan
    )
    app.state.gateway = gateway
    return app
