"""Claude Code's hook events → action events, and loopwarden's answers (pure).

Claude Code POSTs each hook's input as JSON to an ``http`` hook. Handled:

- ``PostToolUse`` / ``PostToolUseFailure``: the tool call is published as an action
  (session id → loop id, tool name → action type, ``tool_input`` → params, the
  response or error, ``tool_use_id`` → ``tool_call_id``); the answer carries the
  session's pending warnings as ``additionalContext``, which Claude Code adds to the
  model's context;
- ``UserPromptSubmit``: the pending warnings, as for PostToolUse (a new prompt after
  a stop still sees why);
- ``PreToolUse``: refused (``permissionDecision: deny``) once a stop was recommended
  for the session; otherwise no opinion;
- ``Stop`` / ``SessionEnd``: the loop's end is published.

Any other event is answered with no opinion.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from loopwarden.adapters.calls import context_text, stop_text, tool_call_fields
from loopwarden.schemas.events import LoopId
from loopwarden.schemas.warnings import LoopWarning

OBSERVED = frozenset({"PostToolUse", "PostToolUseFailure"})
INJECTING = OBSERVED | {"UserPromptSubmit"}
"""Events whose answer can carry ``additionalContext``."""
ENDINGS = frozenset({"Stop", "SessionEnd"})


class HookInput(BaseModel):
    """The fields loopwarden reads from a Claude Code hook input (others are ignored)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    session_id: LoopId
    hook_event_name: str = Field(min_length=1, max_length=100)
    tool_name: str | None = Field(None, max_length=200)
    tool_input: dict[str, Any] = Field(default_factory=dict)
    tool_response: Any = None
    tool_use_id: str | None = Field(None, max_length=200)
    error: str | None = None
    is_interrupt: bool | None = None


def _failed(hook: HookInput) -> str | None:
    """The error of a failed call, or None."""
    if hook.hook_event_name == "PostToolUseFailure":
        return hook.error or "tool call failed"
    response = hook.tool_response
    if isinstance(response, dict):
        if response.get("success") is False or response.get("is_error") is True:
            return str(response.get("error") or response.get("message") or "tool call failed")
        if response.get("interrupted") is True:
            return "interrupted"
    return None


def action_fields(hook: HookInput) -> tuple[str, dict[str, Any]] | None:
    """(action type, payload fields) of the action a hook reports, or None."""
    if hook.hook_event_name in OBSERVED and hook.tool_name:
        error = _failed(hook)
        fields = tool_call_fields(
            hook.tool_input,
            result=None if error else hook.tool_response,
            error=error,
            tool_call_id=hook.tool_use_id,
        )
        return hook.tool_name, fields
    if hook.hook_event_name in ENDINGS:
        reason = "session_end" if hook.hook_event_name == "SessionEnd" else "finalized"
        return "loop_end", {"turn": "message", "terminated": True, "result": reason}
    return None


def post_tool_use_answer(warnings: list[LoopWarning], event: str = "PostToolUse") -> dict[str, Any]:
    """The answer to a PostToolUse (or PostToolUseFailure) hook: pending warnings as
    additional context, under the event's own name."""
    if not warnings:
        return {}
    return {
        "hookSpecificOutput": {
            "hookEventName": event,
            "additionalContext": context_text(warnings),
        }
    }


def pre_tool_use_answer(stop: LoopWarning | None) -> dict[str, Any]:
    """The answer to a PreToolUse hook: deny once a stop is in force, else no opinion."""
    if stop is None:
        return {}
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": stop_text(stop),
        }
    }


def settings_snippet(url: str, token_env: str | None = None) -> dict[str, Any]:
    """The ``hooks`` block of Claude Code's settings.json that points at ``url``; with
    ``token_env``, the bearer token is read from that environment variable."""

    def entry(matcher: str | None) -> dict[str, Any]:
        hook: dict[str, Any] = {"type": "http", "url": url, "timeout": 5}
        if token_env:
            hook["headers"] = {"Authorization": f"Bearer ${token_env}"}
            hook["allowedEnvVars"] = [token_env]
        return {"matcher": matcher, "hooks": [hook]} if matcher else {"hooks": [hook]}

    return {
        "hooks": {
            "PreToolUse": [entry("*")],
            "PostToolUse": [entry("*")],
            "PostToolUseFailure": [entry("*")],
            "UserPromptSubmit": [entry(None)],
            "Stop": [entry(None)],
        }
    }
