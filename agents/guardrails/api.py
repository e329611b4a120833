"""The guardrails HTTP API (seed 003 "API Endpoints"), served by the workers.

- ``POST /orchestrator/loop-complete``
- ``GET  /orchestrator/guardrails-status/{loop_id}``
- ``POST /orchestrator/override-guardrails/{loop_id}`` (bearer token)
- ``GET  /openapi.json``

Any worker answers: a request is forwarded to the worker that owns the loop
family's partition (found through Faust's partition assignor), which publishes
the event to the loop-completions topic and answers once its own agent has
processed it.

Who may call what:

- overrides always need ``Authorization: Bearer $LOOPWARDEN_API__TOKEN`` (a worker
  refuses to start the API with overrides enabled and no token);
- a completion can finalize or halt a family, so with a token configured it
  needs the token too (``api.protect_completions``, on by default);
- the status is read-only and shows redacted values; ``api.protect_status``
  puts it behind the token as well.

The token is only read from the header, never from the query string. Bodies
over ``api.max_body_bytes`` get 413. A completion's event id comes from the
``Idempotency-Key`` header, or from the loop id and the body, so a client that
retries after a timeout is answered with the first result and counted once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from faust.web import Request, Response, View
from pydantic import ValidationError

from loopwarden.agents.guardrails.declaration import FAMILY_STATES
from loopwarden.agents.guardrails.engine import GuardrailEngine
from loopwarden.agents.guardrails.openapi import LoopCompleteRequest, openapi_document
from loopwarden.agents.guardrails.state import FamilyState
from loopwarden.errors import ApiError, ConfigurationError, EventValidationError
from loopwarden.schemas import codec
from loopwarden.schemas.completions import OverridePayload, validate_guardrail_event
from loopwarden.schemas.events import field_errors
from loopwarden.schemas.families import family_of
from loopwarden.schemas.ids import derived_id, new_event_id
from loopwarden.streams.runtime.app import LoopwardenApp
from loopwarden.streams.runtime.table_store import TableStore
from loopwarden.streams.runtime.web_api import answer_json, check_bearer, read_json_body
from loopwarden.streams.runtime.workarounds import aiokafka_producer

log = logging.getLogger(__name__)

ROUTED_HEADER = "X-Loopwarden-Routed"
SERVED_BY_HEADER = "X-Loopwarden-Served-By"
IDEMPOTENCY_HEADER = "Idempotency-Key"
_FORWARDED_HEADERS = ("Authorization", "Content-Type", IDEMPOTENCY_HEADER)


def check_api_settings(app: LoopwardenApp) -> None:
    """Refuse to serve overrides without a token."""
    api = app.loopwarden.api
    if app.loopwarden.web_port and api.overrides_enabled and api.token is None:
        raise ConfigurationError(
            "the guardrails API serves overrides, which need a bearer token: set "
            "LOOPWARDEN_API__TOKEN, or LOOPWARDEN_API__OVERRIDES_ENABLED=false"
        )


def register_guardrails_api(app: LoopwardenApp, store: TableStore) -> None:
    """Add the three endpoints and the OpenAPI document to the worker's web server."""
    check_api_settings(app)
    gateway = GuardrailsGateway(app, store)
    for path, view in PAGES.items():
        app.page(path)(type(view.__name__, (view,), {"gateway": gateway}))


class GuardrailsGateway:
    """What the endpoints share: the checks, the forwarding to a family's owner, the
    family states, and the publish-then-wait of an event (module docstring)."""

    def __init__(self, app: LoopwardenApp, store: TableStore) -> None:
        self.app = app
        self.store = store
        self.api = app.loopwarden.api
        self.engine = GuardrailEngine(app.loopwarden.guardrails)

    async def answer(self, view: View, handle: Callable[[], Awaitable[Any]]) -> Response:
        """Run ``handle``: a forwarded response as it is, a dict as JSON, errors as JSON."""
        served_by = {SERVED_BY_HEADER: str(self.app.conf.canonical_url)}
        return await answer_json(view, handle, served_by)

    async def loop_complete(self, view: View, request: Request) -> Any:
        """``POST /orchestrator/loop-complete``: the guardrails' decision for a completion."""
        raw, data = await read_json_body(request, self.api.max_body_bytes)
        body = _valid(LoopCompleteRequest, data, "invalid loop completion")
        if body.override_fatigue or body.override_max_reruns:
            self.authorize_override(request)
        elif self.api.protect_completions and self.api.token is not None:
            check_bearer(request, self.api.token, "completions")
        family = family_of(body.loop_id)
        forwarded = await self.forward(view, request, family, raw)
        if forwarded is not None:
            return forwarded
        problem = self.engine.unscheduled(
            self.load(family), body.loop_id, body.max_reruns, body.override_max_reruns
        )
        if problem is not None:
            raise ApiError(422, problem, [{"path": "loop_id", "message": problem}])
        payload = body.model_dump(exclude={"loop_id"}, exclude_none=True)
        key = request.headers.get(IDEMPOTENCY_HEADER) or codec.dumps(payload).decode()
        event_id = derived_id("loop_complete", body.loop_id, key)
        return await self.publish_and_wait("loop_complete", body.loop_id, payload, event_id)

    async def status(self, view: View, request: Request, loop_id: str) -> Any:
        """``GET /orchestrator/guardrails-status/{loop_id}``: the seed's status."""
        if self.api.protect_status:
            check_bearer(request, self.api.token, "status requests")
        family = family_of(loop_id)
        forwarded = await self.forward(view, request, family, b"")
        if forwarded is not None:
            return forwarded
        state = self.load(family)
        status = self.engine.status(state, loop_id) if state else None
        if status is None:
            raise self.unknown_loop(loop_id)
        return status

    async def override(self, view: View, request: Request, loop_id: str) -> Any:
        """``POST /orchestrator/override-guardrails/{loop_id}``: sticky overrides."""
        self.authorize_override(request)
        raw, data = await read_json_body(request, self.api.max_body_bytes)
        _valid(OverridePayload, data, "invalid override")
        family = family_of(loop_id)
        forwarded = await self.forward(view, request, family, raw)
        if forwarded is not None:
            return forwarded
        state = self.load(family)
        if state is None or loop_id not in state.traces:
            raise self.unknown_loop(loop_id)
        return await self.publish_and_wait("guardrail_override", loop_id, data)

    def authorize_override(self, request: Request) -> None:
        """Overrides: enabled here, and the bearer token given."""
        if not self.api.overrides_enabled:
            raise ApiError(403, "overrides are disabled on this deployment")
        check_bearer(request, self.api.token, "overrides")

    def load(self, family: str) -> FamilyState | None:
        """The family's state as this worker's table holds it."""
        data = self.store.get(family.encode())
        return FamilyState.restore(family, data) if data else None

    async def forward(
        self, view: View, request: Request, family: str, body: bytes
    ) -> Response | None:
        """Send the request to the family's owner; None when that is this worker."""
        if request.headers.get(ROUTED_HEADER):
            return None
        app = self.app
        try:
            # Faust maps the key with the producer's metadata: make sure it has the topic.
            await aiokafka_producer(app).partitions_for(self.store.changelog)
            owner = app.router.key_store(FAMILY_STATES.table, family.encode())
        except (KeyError, TypeError) as exc:
            raise ApiError(503, "partition assignment not known yet; retry shortly") from exc
        here = app.conf.canonical_url
        if (owner.host, owner.port) == (here.host, here.port):
            return None
        headers = {k: request.headers[k] for k in _FORWARDED_HEADERS if k in request.headers}
        headers[ROUTED_HEADER] = "1"
        url = request.url.with_host(owner.host or "").with_port(owner.port)
        async with app.http_client.request(
            method=request.method, url=url, headers=headers, data=body or None
        ) as response:
            served_by = response.headers.get(SERVED_BY_HEADER, str(owner))
            return view.bytes(
                await response.read(),
                content_type="application/json",
                status=response.status,
                headers={SERVED_BY_HEADER: served_by},
            )

    async def publish_and_wait(
        self, kind: str, loop_id: str, payload: dict[str, Any], event_id: str | None = None
    ) -> Any:
        """Publish a guardrail event for ``loop_id`` and wait for its agent's answer."""
        event_id = event_id or new_event_id()
        try:
            event = validate_guardrail_event(
                {
                    "event_id": event_id,
                    "type": kind,
                    "loop_id": loop_id,
                    "occurred_at": time.time(),
                    "payload": payload,
                }
            )
        except EventValidationError as exc:
            raise ApiError(
                422, str(exc), [{"path": e.path, "message": e.message} for e in exc.errors]
            ) from exc
        app = self.app
        waiter = app.replies.expect(event_id)
        try:
            await app.producer.send_and_wait(
                app.loopwarden.topics.loop_completions,
                family_of(loop_id).encode(),
                codec.dumps(event.model_dump(mode="json", exclude_none=True)),
                None,
                None,
                None,
            )
            return await _wait(waiter, self.api.request_timeout_s)
        finally:
            app.replies.discard(event_id, waiter)

    def unknown_loop(self, loop_id: str) -> ApiError:
        """404, unless this worker is taking partitions over (a rebalance, or its tables
        still recovering): then a family it cannot find may just not be restored yet,
        and the answer is 503, retry (a 404 had followed an acknowledged completion)."""
        tables: Any = self.app.tables  # Faust's TableManager (its type declares no recovery)
        if self.app.rebalancing or not tables.recovery.completed.is_set():
            return ApiError(503, "partitions are being taken over here; retry shortly")
        return ApiError(404, f"unknown loop {loop_id!r}")


class GatewayView(View):
    """A page of the guardrails API; its gateway is set when the page is registered."""

    gateway: GuardrailsGateway


class LoopCompleteView(GatewayView):
    async def post(self, request: Request) -> Response:
        return await self.gateway.answer(self, partial(self.gateway.loop_complete, self, request))


class GuardrailsStatusView(GatewayView):
    async def get(self, request: Request, loop_id: str) -> Response:
        handle = partial(self.gateway.status, self, request, loop_id)
        return await self.gateway.answer(self, handle)


class OverrideGuardrailsView(GatewayView):
    async def post(self, request: Request, loop_id: str) -> Response:
        handle = partial(self.gateway.override, self, request, loop_id)
        return await self.gateway.answer(self, handle)


class OpenApiView(GatewayView):
    async def get(self, request: Request) -> Response:
        return self.json(openapi_document())


PAGES: dict[str, type[GatewayView]] = {
    "/orchestrator/loop-complete": LoopCompleteView,
    "/orchestrator/guardrails-status/{loop_id}": GuardrailsStatusView,
    "/orchestrator/override-guardrails/{loop_id}": OverrideGuardrailsView,
    "/openapi.json": OpenApiView,
}
"""The guardrails API's resources: a view class each."""


def _valid(model: Any, data: Any, what: str) -> Any:
    """``data`` validated by ``model``, else a 422 naming every wrong field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = [{"path": e.path, "message": e.message} for e in field_errors(exc)]
        raise ApiError(422, what, errors) from exc


async def _wait(waiter: Any, timeout_s: float) -> Any:
    try:
        return await asyncio.wait_for(waiter, timeout_s)
    except TimeoutError as exc:
        raise ApiError(504, f"the stream did not answer within {timeout_s:.0f}s") from exc
