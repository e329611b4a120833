"""OpenAI Chat Completions (``POST /v1/chat/completions``), as the gateway speaks it."""

from __future__ import annotations

import time
import uuid
from typing import Any

from loopwarden.gateway.steps import (
    JsonBody,
    Step,
    Usage,
    arguments,
    paired,
    sse,
    text_of,
    tokens,
    with_system_text,
)

INSTRUCTION_ROLES = ("system", "developer")


class OpenAIChat:
    """``messages``: system/developer, user, assistant (text, ``tool_calls``), tool."""

    name = "openai_chat"

    def steps(self, body: JsonBody) -> list[Step]:
        calls: dict[str, tuple[str, Any]] = {}
        out: list[Step] = []
        for message in body.get("messages") or []:
            if not isinstance(message, dict):
                continue
            role = message.get("role")
            if role == "user":
                text = text_of(message.get("content"))
                if text:
                    out.append(Step("heard", text))
            elif role == "assistant":
                text = text_of(message.get("content"))
                if text:
                    out.append(Step("said", text))
                for call in message.get("tool_calls") or []:
                    function = call.get("function") or {}
                    name = function.get("name") or "tool"
                    calls[call.get("id") or ""] = (name, arguments(function.get("arguments")))
            elif role == "tool":
                result = Step(
                    "tool", text_of(message.get("content")), call_id=message.get("tool_call_id")
                )
                out.extend(paired(calls, [result]))
        return out

    def start(self, body: JsonBody) -> str:
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        system = [text_of(m.get("content")) for m in messages if m.get("role") in INSTRUCTION_ROLES]
        first = next((text_of(m.get("content")) for m in messages if m.get("role") == "user"), "")
        return "\x1f".join([*system[:1], first])

    def with_note(self, body: JsonBody, note: str) -> JsonBody:
        messages = list(body.get("messages") or [])
        if (
            messages
            and isinstance(messages[0], dict)
            and messages[0].get("role") in INSTRUCTION_ROLES
        ):
            first = dict(messages[0])
            first["content"] = with_system_text(first.get("content"), note)
            messages[0] = first
        else:
            messages.insert(0, {"role": "system", "content": note})
        return {**body, "messages": messages}

    def stop_json(self, body: JsonBody, text: str) -> JsonBody:
        return {
            "id": f"chatcmpl-loopwarden-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or "loopwarden",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text, "refusal": None},
                    "logprobs": None,
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }

    def stop_events(self, body: JsonBody, text: str) -> list[bytes]:
        whole = self.stop_json(body, text)
        head = {k: whole[k] for k in ("id", "created", "model")}
        chunk = {**head, "object": "chat.completion.chunk"}

        def choice(delta: dict[str, Any], finish: str | None) -> JsonBody:
            return {**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        events = [
            sse(choice({"role": "assistant", "content": text}, None)),
            sse(choice({}, "stop")),
        ]
        if (body.get("stream_options") or {}).get("include_usage"):
            events.append(sse({**chunk, "choices": [], "usage": whole["usage"]}))
        return [*events, sse("[DONE]")]

    def usage(self, payload: JsonBody) -> Usage:
        return tokens(payload.get("usage"), "prompt_tokens", "completion_tokens", "total_tokens")
