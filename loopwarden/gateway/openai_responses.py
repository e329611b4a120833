"""The OpenAI Responses API (``POST /v1/responses``), as the gateway speaks it (Codex
CLI's API): ``instructions``, and ``input`` as text or a list of items — messages,
``function_call`` / ``custom_tool_call`` and their ``*_output`` items."""

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
)

CALLS = {"function_call": "arguments", "custom_tool_call": "input"}
OUTPUTS = ("function_call_output", "custom_tool_call_output")


def _items(body: JsonBody) -> list[JsonBody]:
    raw = body.get("input")
    if isinstance(raw, str):
        return [{"type": "message", "role": "user", "content": raw}]
    return [item for item in raw or [] if isinstance(item, dict)]


class OpenAIResponses:
    """Steps from ``input`` items; the note goes into ``instructions``."""

    name = "openai_responses"

    def steps(self, body: JsonBody) -> list[Step]:
        calls: dict[str, tuple[str, Any]] = {}
        out: list[Step] = []
        for item in _items(body):
            kind = item.get("type", "message")
            if kind == "message":
                text = text_of(item.get("content"))
                role = item.get("role")
                if text and role == "user":
                    out.append(Step("heard", text))
                elif text and role == "assistant":
                    out.append(Step("said", text))
            elif kind in CALLS:
                name = item.get("name") or "tool"
                calls[item.get("call_id") or ""] = (name, arguments(item.get(CALLS[kind])))
            elif kind in OUTPUTS:
                result = Step("tool", text_of(item.get("output")), call_id=item.get("call_id"))
                out.extend(paired(calls, [result]))
        return out

    def start(self, body: JsonBody) -> str:
        first = next(
            (
                text_of(item.get("content"))
                for item in _items(body)
                if item.get("type", "message") == "message" and item.get("role") == "user"
            ),
            "",
        )
        return f"{text_of(body.get('instructions'))}\x1f{first}"

    def with_note(self, body: JsonBody, note: str) -> JsonBody:
        instructions = body.get("instructions")
        if isinstance(instructions, str) and instructions:
            return {**body, "instructions": f"{instructions}\n\n{note}"}
        return {**body, "instructions": note}

    def stop_json(self, body: JsonBody, text: str) -> JsonBody:
        message = {
            "type": "message",
            "id": f"msg_loopwarden_{uuid.uuid4().hex[:24]}",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
        return {
            "id": f"resp_loopwarden_{uuid.uuid4().hex[:24]}",
            "object": "response",
            "created_at": int(time.time()),
            "status": "completed",
            "error": None,
            "incomplete_details": None,
            "instructions": None,
            "model": body.get("model") or "loopwarden",
            "output": [message],
            "parallel_tool_calls": False,
            "tool_choice": "auto",
            "tools": [],
            "usage": {
                "input_tokens": 0,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 0,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 0,
            },
        }

    def stop_events(self, body: JsonBody, text: str) -> list[bytes]:
        whole = self.stop_json(body, text)
        message = whole["output"][0]
        part = message["content"][0]
        started = {**whole, "status": "in_progress", "output": [], "usage": None}
        item_id = message["id"]
        events: list[tuple[str, JsonBody]] = [
            ("response.created", {"response": started}),
            ("response.in_progress", {"response": started}),
            (
                "response.output_item.added",
                {"output_index": 0, "item": {**message, "status": "in_progress", "content": []}},
            ),
            (
                "response.content_part.added",
                {
                    "item_id": item_id,
                    "output_index": 0,
                    "content_index": 0,
                    "part": {**part, "text": ""},
                },
            ),
            (
                "response.output_text.delta",
                {"item_id": item_id, "output_index": 0, "content_index": 0, "delta": text},
            ),
            (
                "response.output_text.done",
                {"item_id": item_id, "output_index": 0, "content_index": 0, "text": text},
            ),
            (
                "response.content_part.done",
                {"item_id": item_id, "output_index": 0, "content_index": 0, "part": part},
            ),
            ("response.output_item.done", {"output_index": 0, "item": message}),
            ("response.completed", {"response": whole}),
        ]
        return [
            sse({"type": name, "sequence_number": n, **data}, event=name)
            for n, (name, data) in enumerate(events)
        ]

    def usage(self, payload: JsonBody) -> Usage:
        response = payload.get("response") if "response" in payload else payload
        if not isinstance(response, dict):
            return {}
        return tokens(response.get("usage"), "input_tokens", "output_tokens", "total_tokens")
