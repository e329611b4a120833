"""``POST /hooks/claude-code``: Claude Code's HTTP hooks, answered by any worker
(``GET /hooks/claude-code/sessions/{id}``: what is pending for a session).

Each worker with the ``hooks`` role (on by default; it needs the web server,
``LOOPWARDEN_WEB_PORT``) follows the warnings topic — every partition, from its end,
no consumer group — into a bounded :class:`~loopwarden.streams.client.inbox.WarningInbox`,
so that whichever worker a hook reaches can answer it. Point one Claude Code at one
worker (or a sticky balancer): a session's pending warnings are handed out by the
worker that answers its next PostToolUse.

With ``LOOPWARDEN_API__TOKEN`` set, hooks need ``Authorization: Bearer <token>``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from faust.web import Request, Response, View
from pydantic import ValidationError

from loopwarden.agents.capabilities import WorkerResources
from loopwarden.agents.hooks.claude_code import (
    INJECTING,
    HookInput,
    action_fields,
    post_tool_use_answer,
    pre_tool_use_answer,
)
from loopwarden.errors import ApiError, LoopwardenError
from loopwarden.schemas.events import field_errors
from loopwarden.schemas.ids import derived_id
from loopwarden.streams.client.event_builder import encode_event, make_action_event
from loopwarden.streams.client.inbox import WarningInbox
from loopwarden.streams.client.subscriber import WarningSubscriber
from loopwarden.streams.runtime.app import LoopwardenApp
from loopwarden.streams.runtime.backoff import Backoff
from loopwarden.streams.runtime.capability import Capability
from loopwarden.streams.runtime.capability_runner import declare_topics
from loopwarden.streams.runtime.web_api import answer_json, check_bearer, read_json_body

log = logging.getLogger(__name__)

PATH = "/hooks/claude-code"
READY_TIMEOUT_S = 10.0


def register_claude_code_hooks(
    app: LoopwardenApp, resources: WorkerResources, capability: Capability
) -> WarningInbox:
    """Serve ``POST /hooks/claude-code`` and follow the warnings for it."""
    settings = app.loopwarden
    declare_topics(app, capability)
    cfg = settings.ingest
    inbox = WarningInbox(max_loops=cfg.hook_sessions, ttl_s=cfg.hook_session_ttl_s)
    following = asyncio.Event()

    async def follow() -> None:
        async with WarningSubscriber(settings) as warnings:
            following.set()
            async for warning in warnings:
                inbox.add(warning)

    def say(exc: BaseException, attempt: int, delay: float) -> None:
        following.clear()
        log.warning("hooks: following the warnings failed (%s); retrying in %.1f s", exc, delay)

    @app.task
    async def follow_warnings_for_hooks() -> None:
        await Backoff(1.0, 30.0, None).until_done(follow, LoopwardenError, say)

    def publish(hook: HookInput, raw: bytes) -> None:
        fields = action_fields(hook)
        if fields is None:
            return
        action_type, payload = fields
        event_id = derived_id("claude_code", hook.session_id, raw.decode(errors="replace"))
        try:
            event = make_action_event(
                hook.loop_id,
                action_type,
                event_id=event_id,
                occurred_at=time.time(),
                **payload,
            )
        except LoopwardenError as exc:
            raise ApiError(422, f"the hook's action is not a valid event: {exc}") from exc
        app.outputs.emit("actions", event, encoded=encode_event(event))

    async def handle(request: Request) -> dict[str, Any]:
        if settings.api.token is not None:
            check_bearer(request, settings.api.token, "hooks")
        raw, data = await read_json_body(request, settings.api.max_body_bytes)
        try:
            hook = HookInput.model_validate(data)
        except ValidationError as exc:
            errors = [{"path": e.path, "message": e.message} for e in field_errors(exc)]
            raise ApiError(422, "not a Claude Code hook input", errors) from exc
        if not following.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(following.wait(), READY_TIMEOUT_S)
            if not following.is_set():
                raise ApiError(503, "not following the warnings topic yet; retry shortly")
        if hook.hook_event_name == "PreToolUse":
            # a sub-agent stops with its session
            stop = inbox.stop_for(hook.loop_id) or inbox.stop_for(hook.session_id)
            return pre_tool_use_answer(stop)
        publish(hook, raw)
        if hook.hook_event_name in INJECTING:
            return post_tool_use_answer(inbox.take(hook.loop_id), hook.hook_event_name)
        return {}

    @app.page(PATH)
    class ClaudeCodeHook(View):
        async def post(self, request: Request) -> Response:
            return await answer_json(self, lambda: handle(request))

    @app.page(PATH + "/sessions/{session_id}")
    class ClaudeCodeSession(View):
        async def get(self, request: Request, session_id: str) -> Response:
            async def status() -> dict[str, Any]:
                if settings.api.token is not None and settings.api.protect_status:
                    check_bearer(request, settings.api.token, "status requests")
                stop = inbox.stop_for(session_id)
                return {
                    "session_id": session_id,
                    "following": following.is_set(),
                    "warnings_seen": inbox.seen(session_id),
                    "pending": inbox.pending(session_id),
                    "stop": None if stop is None else stop.reason,
                }

            return await answer_json(self, status)

    return inbox
