"""What the gateway reads out of a model request: the conversation's steps, and the
shape every API dialect gives the gateway (pure: no HTTP, no broker).

A request to a model carries the whole conversation so far. Each dialect
(:mod:`.openai_chat`, :mod:`.openai_responses`, :mod:`.anthropic_messages`) turns it into
:class:`Step` s in conversation order — a tool call with its result (published once its
result is in the conversation), the person's turns, the model's text answers — and
knows how to put a note in front of the model for one call and how to answer in the
model's place.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import orjson

JsonBody = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Step:
    """One step of the conversation, as an action event is published for it."""

    kind: Literal["tool", "said", "heard"]
    """tool: a tool call with its result; said: the model's text answer; heard: the
    person's turn."""
    text: str | None = None
    """The result (an error's text when ``error``), the answer, or what the person said."""
    tool: str | None = None
    args: Any = None
    error: bool = False
    call_id: str | None = None


Usage = dict[str, int]
"""``input_tokens``, ``output_tokens``, ``total_tokens`` (what the fleet's budgets read)."""


class Dialect(Protocol):
    """One model API, as the gateway speaks it."""

    name: str
    """``openai_chat``, ``openai_responses``, ``anthropic_messages``."""

    def steps(self, body: JsonBody) -> list[Step]:
        """The conversation's steps, oldest first."""
        ...

    def start(self, body: JsonBody) -> str:
        """The conversation's start (its instructions and first user turn): what the
        loop's fingerprint is made of."""
        ...

    def with_note(self, body: JsonBody, note: str) -> JsonBody:
        """``body`` with ``note`` in front of the model, for this call only."""
        ...

    def stop_json(self, body: JsonBody, text: str) -> JsonBody:
        """A complete, non-streamed answer saying ``text``, in this API's shape."""
        ...

    def stop_events(self, body: JsonBody, text: str) -> list[bytes]:
        """The same answer as this API's server-sent events."""
        ...

    def usage(self, payload: JsonBody) -> Usage:
        """The usage a response (or one streamed event's data) reports; empty: none."""
        ...


def text_of(content: Any) -> str:
    """The text of a message's content: a string, or the text of its text parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [text_of(part) for part in content]
        return "\n".join(part for part in parts if part)
    if isinstance(content, dict):
        if isinstance(content.get("text"), str):
            return str(content["text"])
        if "content" in content:
            return text_of(content["content"])
    return ""


def arguments(raw: Any) -> Any:
    """A tool call's arguments: JSON text parsed (kept as text when it is not JSON)."""
    if isinstance(raw, str):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            return raw
    return raw


def sse(data: JsonBody | str, event: str | None = None) -> bytes:
    """One server-sent event (``data`` a JSON object, or text such as ``[DONE]``)."""
    payload = data if isinstance(data, str) else orjson.dumps(data).decode()
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def paired(calls: dict[str, tuple[str, Any]], results: Iterable[Step]) -> list[Step]:
    """Results (``call_id`` set) completed with their call's tool name and arguments."""
    out = []
    for step in results:
        name, args = calls.get(step.call_id or "", (step.tool or "tool", step.args))
        out.append(Step("tool", step.text, name, args, step.error, step.call_id))
    return out


def with_system_text(existing: Any, note: str) -> Any:
    """A system prompt (text or a list of text parts) with ``note`` after it."""
    if existing is None or existing == "":
        return note
    if isinstance(existing, str):
        return f"{existing}\n\n{note}"
    if isinstance(existing, list):
        return [*existing, {"type": "text", "text": note}]
    return existing


def merge_usage(into: Usage, found: Usage) -> Usage:
    """``found`` folded into ``into`` (a stream reports parts in several events)."""
    for key, value in found.items():
        into[key] = max(into.get(key, 0), value)
    if "total_tokens" not in found and {"input_tokens", "output_tokens"} <= into.keys():
        into["total_tokens"] = into["input_tokens"] + into["output_tokens"]
    return into


def tokens(raw: Any, input_key: str, output_key: str, total_key: str | None) -> Usage:
    """A usage object's counts, renamed to :data:`Usage`'s keys."""
    if not isinstance(raw, dict):
        return {}
    found: Usage = {}
    for key, name in ((input_key, "input_tokens"), (output_key, "output_tokens")):
        if isinstance(raw.get(key), int):
            found[name] = raw[key]
    if total_key and isinstance(raw.get(total_key), int):
        found["total_tokens"] = raw[total_key]
    elif {"input_tokens", "output_tokens"} <= found.keys():
        found["total_tokens"] = found["input_tokens"] + found["output_tokens"]
    return found
