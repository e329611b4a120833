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
    settings = app.loopwarden
    engine = GuardrailEngine(settings.guardrails)

    async def read_body(request: Request) -> tuple[bytes, dict[str, Any]]:
        return await read_json_body(request, settings.api.max_body_bytes)

    def check_token(request: Request, what: str) -> None:
        check_bearer(request, settings.api.token, what)

    def authorize(request: Request) -> None:
        if not settings.api.overrides_enabled:
            raise ApiError(403, "overrides are disabled on this deployment")
        check_token(request, "overrides")

    async def forward(view: View, request: Request, family: str, body: bytes) -> Response | None:
        """Send the request to the family's owner; None when that is this worker."""
        if request.headers.get(ROUTED_HEADER):
            return None
        try:
            # Faust maps the key with the producer's metadata: make sure it has the topic.
            await aiokafka_producer(app).partitions_for(store.changelog)
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
        kind: str, loop_id: str, payload: dict[str, Any], event_id: str | None = None
    ) -> Any:
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
        waiter = app.replies.expect(event_id)
        try:
            await app.producer.send_and_wait(
                settings.topics.loop_completions,
                family_of(loop_id).encode(),
                codec.dumps(event.model_dump(mode="json", exclude_none=True)),
                None,
                None,
                None,
            )
            return await _wait(waiter, settings.api.request_timeout_s)
        finally:
            app.replies.discard(event_id, waiter)

    def unknown_loop(loop_id: str) -> ApiError:
        """404, unless this worker is taking partitions over (a rebalance, or its tables
        still recovering): then a family it cannot find may just not be restored yet,
        and the answer is 503, retry (a 404 had followed an acknowledged completion)."""
        tables: Any = app.tables  # Faust's TableManager (its type declares no recovery)
        if app.rebalancing or not tables.recovery.completed.is_set():
            return ApiError(503, "partitions are being taken over here; retry shortly")
        return ApiError(404, f"unknown loop {loop_id!r}")

    def load(family: str) -> FamilyState | None:
        data = store.get(family.encode())
        return FamilyState.restore(family, data) if data else None

    async def answer(view: View, handler: Any) -> Response:
        """Run ``handler``: a forwarded response as it is, a dict as JSON, errors as JSON."""
        return await answer_json(view, handler, {SERVED_BY_HEADER: str(app.conf.canonical_url)})

    @app.page("/orchestrator/loop-complete")
    class LoopComplete(View):
        async def post(self, request: Request) -> Response:
            async def handle() -> Any:
                raw, data = await read_body(request)
                try:
                    body = LoopCompleteRequest.model_validate(data)
                except ValidationError as exc:
                    raise ApiError(
                        422,
                        "invalid loop completion",
                        [{"path": e.path, "message": e.message} for e in field_errors(exc)],
                    ) from exc
                if body.override_fatigue or body.override_max_reruns:
                    authorize(request)
                elif settings.api.protect_completions and settings.api.token is not None:
                    check_token(request, "completions")
                family = family_of(body.loop_id)
                forwarded = await forward(self, request, family, raw)
                if forwarded is not None:
                    return forwarded
                problem = engine.unscheduled(
                    load(family), body.loop_id, body.max_reruns, body.override_max_reruns
                )
                if problem is not None:
                    raise ApiError(422, problem, [{"path": "loop_id", "message": problem}])
                payload = body.model_dump(exclude={"loop_id"}, exclude_none=True)
                key = request.headers.get(IDEMPOTENCY_HEADER) or codec.dumps(payload).decode()
                event_id = derived_id("loop_complete", body.loop_id, key)
                return await publish_and_wait("loop_complete", body.loop_id, payload, event_id)

            return await answer(self, handle)

    @app.page("/orchestrator/guardrails-status/{loop_id}")
    class GuardrailsStatus(View):
        async def get(self, request: Request, loop_id: str) -> Response:
            async def handle() -> Any:
                if settings.api.protect_status:
                    check_token(request, "status requests")
                family = family_of(loop_id)
                forwarded = await forward(self, request, family, b"")
                if forwarded is not None:
                    return forwarded
                state = load(family)
                status = engine.status(state, loop_id) if state else None
                if status is None:
                    raise unknown_loop(loop_id)
                return status

            return await answer(self, handle)

    @app.page("/orchestrator/override-guardrails/{loop_id}")
    class OverrideGuardrails(View):
        async def post(self, request: Request, loop_id: str) -> Response:
            async def handle() -> Any:
                authorize(request)
                raw, data = await read_body(request)
                try:
                    OverridePayload.model_validate(data)
                except ValidationError as exc:
                    raise ApiError(
                        422,
                        "invalid override",
                        [{"path": e.path, "message": e.message} for e in field_errors(exc)],
                    ) from exc
                family = family_of(loop_id)
                forwarded = await forward(self, request, family, raw)
                if forwarded is not None:
                    return forwarded
                state = load(family)
                if state is None or loop_id not in state.traces:
                    raise unknown_loop(loop_id)
                return await publish_and_wait("guardrail_override", loop_id, data)

            return await answer(self, handle)

    @app.page("/openapi.json")
    class OpenApi(View):
        async def get(self, request: Request) -> Response:
            return self.json(openapi_document())


async def _wait(waiter: Any, timeout_s: float) -> Any:
    try:
        return await asyncio.wait_for(waiter, timeout_s)
    except TimeoutError as exc:
        raise ApiError(504, f"the stream did not answer within {timeout_s:.0f}s") from exc
