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
from functools import partial
from typing import Any

from faust.web import Request, Response, View
from pydantic import ValidationError

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
from loopwarden.streams.runtime.resources import WorkerResources
from loopwarden.streams.runtime.web_api import answer_json, check_bearer, read_json_body

log = logging.getLogger(__name__)

PATH = "/hooks/claude-code"
READY_TIMEOUT_S = 10.0


def register_claude_code_hooks(
    app: LoopwardenApp, resources: WorkerResources, capability: Capability
) -> WarningInbox:
    """Serve ``POST /hooks/claude-code`` and follow the warnings for it."""
    declare_topics(app, capability)
    hooks = ClaudeCodeHooks(app)
    app.task(hooks.follow_warnings)
    app.page(PATH)(type("ClaudeCodeHook", (HookView,), {"hooks": hooks}))
    app.page(PATH + "/sessions/{session_id}")(
        type("ClaudeCodeSession", (SessionView,), {"hooks": hooks})
    )
    return hooks.inbox


class ClaudeCodeHooks:
    """The hooks' state (the warnings followed into an inbox) and their two resources."""

    def __init__(self, app: LoopwardenApp) -> None:
        self.app = app
        self.api = app.loopwarden.api
        cfg = app.loopwarden.ingest
        self.inbox = WarningInbox(max_loops=cfg.hook_sessions, ttl_s=cfg.hook_session_ttl_s)
        self.following = asyncio.Event()

    async def follow_warnings(self) -> None:
        """Follow the warnings topic into the inbox, for as long as the worker runs."""
        await Backoff(1.0, 30.0, None).until_done(self._follow, LoopwardenError, self._lost)

    async def hook(self, request: Request) -> dict[str, Any]:
        """``POST /hooks/claude-code``: publish the hook's action, answer with what the
        agent must hear (a warning, a denial, nothing)."""
        if self.api.token is not None:
            check_bearer(request, self.api.token, "hooks")
        raw, data = await read_json_body(request, self.api.max_body_bytes)
        try:
            hook = HookInput.model_validate(data)
        except ValidationError as exc:
            errors = [{"path": e.path, "message": e.message} for e in field_errors(exc)]
            raise ApiError(422, "not a Claude Code hook input", errors) from exc
        await self._ready()
        inbox = self.inbox
        if hook.hook_event_name == "PreToolUse":
            # a sub-agent stops with its session
            stop = inbox.stop_for(hook.loop_id) or inbox.stop_for(hook.session_id)
            return pre_tool_use_answer(stop)
        self._publish(hook, raw)
        if hook.hook_event_name in INJECTING:
            return post_tool_use_answer(inbox.take(hook.loop_id), hook.hook_event_name)
        return {}

    def session(self, request: Request, session_id: str) -> dict[str, Any]:
        """``GET /hooks/claude-code/sessions/{id}``: what is pending for a session."""
        if self.api.token is not None and self.api.protect_status:
            check_bearer(request, self.api.token, "status requests")
        stop = self.inbox.stop_for(session_id)
        return {
            "session_id": session_id,
            "following": self.following.is_set(),
            "warnings_seen": self.inbox.seen(session_id),
            "pending": self.inbox.pending(session_id),
            "stop": None if stop is None else stop.reason,
        }

    async def _follow(self) -> None:
        async with WarningSubscriber(self.app.loopwarden) as warnings:
            self.following.set()
            async for warning in warnings:
                self.inbox.add(warning)

    def _lost(self, exc: BaseException, attempt: int, delay: float) -> None:
        self.following.clear()
        log.warning("hooks: following the warnings failed (%s); retrying in %.1f s", exc, delay)

    async def _ready(self) -> None:
        if self.following.is_set():
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.following.wait(), READY_TIMEOUT_S)
        if not self.following.is_set():
            raise ApiError(503, "not following the warnings topic yet; retry shortly")

    def _publish(self, hook: HookInput, raw: bytes) -> None:
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
        self.app.outputs.emit("actions", event, encoded=encode_event(event))


class HookView(View):
    """``POST /hooks/claude-code``; its hooks are set when the page is registered."""

    hooks: ClaudeCodeHooks

    async def post(self, request: Request) -> Response:
        return await answer_json(self, partial(self.hooks.hook, request))


class SessionView(View):
    """``GET /hooks/claude-code/sessions/{id}``; its hooks are set at registration."""

    hooks: ClaudeCodeHooks

    async def get(self, request: Request, session_id: str) -> Response:
        async def status() -> dict[str, Any]:
            return self.hooks.session(request, session_id)

        return await answer_json(self, status)
