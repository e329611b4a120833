"""Claude Code's hook events → action events, and loopwarden's answers (pure).

Claude Code POSTs each hook's input as JSON to an ``http`` hook. Handled:

- ``PostToolUse`` / ``PostToolUseFailure``: the tool call is published as an action
  (session id → loop id, tool name → action type, ``tool_input`` → params, the
  response or error, ``tool_use_id`` → ``tool_call_id``, a ``Read``'s file and
  lines → ``read``); the answer carries the
  session's pending warnings as ``additionalContext``, which Claude Code adds to the
  model's context;
- ``UserPromptSubmit``: the pending warnings, as for PostToolUse (a new prompt after
  a stop still sees why); the prompt is published as the counterpart's turn (what the
  person said: heard, not counted as the agent's action);
- ``PreToolUse``: refused (``permissionDecision: deny``) once a stop was recommended
  for the session; otherwise no opinion;
- ``Stop`` / ``SessionEnd``: the loop's end is published.

A sub-agent (Claude Code's Task/Agent tool) is a loop of its own in the session's
family: a hook that fires inside it carries ``agent_id`` (and ``agent_type``), and its
actions are published under ``<session_id>/<agent_id>`` with the session as parent
and root and the agent type as ``agent``. ``SubagentStart`` publishes the
sub-agent's start (a ``delegated_run_start`` message turn with its ``prompt`` as the
task, when the hook carries one), ``SubagentStop`` its end. A sub-agent is refused
its tools once its own loop or its session is told to stop.

Any other event is answered with no opinion.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from loopwarden.schemas.events import LoopId
from loopwarden.schemas.families import RUN_START, TASK_MAX_CHARS
from loopwarden.schemas.tool_calls import HEARD_ACTION, context_text, stop_text, tool_call_fields
from loopwarden.schemas.warnings import LoopWarning

OBSERVED = frozenset({"PostToolUse", "PostToolUseFailure"})
INJECTING = OBSERVED | {"UserPromptSubmit"}
"""Events whose answer can carry ``additionalContext``."""
ENDINGS = frozenset({"Stop", "SessionEnd", "SubagentStop"})
CHECKED_BEFORE_APPLYING = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})
"""Claude Code's tools that check a call before they change anything ("String to
replace not found", "File has not been read yet"): their failures are refusals."""
SUBAGENT_START = "SubagentStart"


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
    agent_id: str | None = Field(None, min_length=1, max_length=120)
    """Set when the hook fires inside a sub-agent."""
    agent_type: str | None = Field(None, max_length=200)
    prompt: str | None = None
    """A sub-agent's task (``SubagentStart``), or the user's prompt."""

    @property
    def loop_id(self) -> str:
        """The loop this hook is about: the session, or a sub-agent of it."""
        if self.agent_id is None:
            return self.session_id
        return f"{self.session_id[:128]}/{self.agent_id}"  # within a loop id's 256

    def family_fields(self) -> dict[str, str]:
        """A sub-agent's place in the session's family (empty for the session itself)."""
        if self.agent_id is None:
            return {"agent": self.agent_type} if self.agent_type else {}
        return {
            "parent_loop_id": self.session_id,
            "root_loop_id": self.session_id,
            "agent": self.agent_type or "subagent",
        }


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


_TEXT_KEYS = ("content", "output", "result", "text")


def response_text(response: Any) -> Any:
    """What a tool's response says, for the event's ``result``: Bash's stdout (and
    stderr), a file read's content, a response's own text; else the response as is.
    The warning quotes it, so ``1 failed`` rather than ``{"stdout": "1 failed", …}``."""
    if not isinstance(response, dict):
        return response
    if "stdout" in response or "stderr" in response:
        parts = [str(response.get(key) or "") for key in ("stdout", "stderr")]
        return "\n".join(part for part in parts if part)
    file = response.get("file")
    if isinstance(file, dict) and isinstance(file.get("content"), str):
        return file["content"]
    for key in _TEXT_KEYS:
        if isinstance(response.get(key), str):
            return response[key]
    return response


def action_fields(hook: HookInput) -> tuple[str, dict[str, Any]] | None:
    """(action type, payload fields) of the action a hook reports, or None; a
    sub-agent's carry its family fields."""
    found = _action(hook)
    if found is None:
        return None
    action_type, fields = found
    return action_type, {**fields, **hook.family_fields()}


def _action(hook: HookInput) -> tuple[str, dict[str, Any]] | None:
    if hook.hook_event_name == SUBAGENT_START and hook.agent_id is not None:
        task = {"task": hook.prompt[:TASK_MAX_CHARS]} if hook.prompt else {}
        return RUN_START, {"turn": "message", **task}
    if hook.hook_event_name == "UserPromptSubmit" and hook.prompt:
        # what the person said: heard, never counted as the agent's action
        return HEARD_ACTION, {"turn": "counterpart", "result": hook.prompt[:TASK_MAX_CHARS]}
    if hook.hook_event_name in OBSERVED and hook.tool_name:
        error = _failed(hook)
        fields = tool_call_fields(
            hook.tool_input,
            result=None if error else response_text(hook.tool_response),
            error=error,
            tool_call_id=hook.tool_use_id,
            tool=hook.tool_name,
            rejected=bool(error) and hook.tool_name in CHECKED_BEFORE_APPLYING,
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
            "SubagentStart": [entry(None)],
            "SubagentStop": [entry(None)],
        }
    }
