"""Anthropic Messages (``POST /v1/messages``), as the gateway speaks it (Claude Code's
API): ``system``, and ``messages`` whose content is text or blocks — text, ``tool_use``,
``tool_result`` (``is_error``)."""

from __future__ import annotations

import uuid
from typing import Any

from loopwarden.gateway.steps import (
    JsonBody,
    Step,
    Usage,
    paired,
    sse,
    text_of,
    tokens,
    with_system_text,
)


def _blocks(content: Any) -> list[JsonBody]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [block for block in content or [] if isinstance(block, dict)]


class AnthropicMessages:
    """Steps from ``messages``; the note goes into ``system``."""

    name = "anthropic_messages"

    def steps(self, body: JsonBody) -> list[Step]:
        calls: dict[str, tuple[str, Any]] = {}
        out: list[Step] = []
        for message in body.get("messages") or []:
            if not isinstance(message, dict):
                continue
            role = message.get("role")
            texts: list[str] = []
            for block in _blocks(message.get("content")):
                kind = block.get("type")
                if kind == "text" and block.get("text"):
                    texts.append(str(block["text"]))
                elif kind == "tool_use":
                    calls[block.get("id") or ""] = (block.get("name") or "tool", block.get("input"))
                elif kind == "tool_result":
                    result = Step(
                        "tool",
                        text_of(block.get("content")),
                        error=bool(block.get("is_error")),
                        call_id=block.get("tool_use_id"),
                    )
                    out.extend(paired(calls, [result]))
            if texts:
                out.append(Step("heard" if role == "user" else "said", "\n".join(texts)))
        return out

    def start(self, body: JsonBody) -> str:
        first = next(
            (
                text_of(m.get("content"))
                for m in body.get("messages") or []
                if isinstance(m, dict) and m.get("role") == "user"
            ),
            "",
        )
        return f"{text_of(body.get('system'))}\x1f{first}"

    def with_note(self, body: JsonBody, note: str) -> JsonBody:
        return {**body, "system": with_system_text(body.get("system"), note)}

    def stop_json(self, body: JsonBody, text: str) -> JsonBody:
        return {
            "id": f"msg_loopwarden_{uuid.uuid4().hex[:24]}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model") or "loopwarden",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }

    def stop_events(self, body: JsonBody, text: str) -> list[bytes]:
        whole = self.stop_json(body, text)
        started = {**whole, "content": [], "stop_reason": None}
        events: list[tuple[str, JsonBody]] = [
            ("message_start", {"message": started}),
            ("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
            ("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": text}}),
            ("content_block_stop", {"index": 0}),
            (
                "message_delta",
                {
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                    "usage": {"output_tokens": 0},
                },
            ),
            ("message_stop", {}),
        ]
        return [sse({"type": name, **data}, event=name) for name, data in events]

    def usage(self, payload: JsonBody) -> Usage:
        if payload.get("type") == "message_start":
            payload = payload.get("message") or {}
        return tokens(payload.get("usage"), "input_tokens", "output_tokens", None)
