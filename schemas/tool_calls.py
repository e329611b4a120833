"""Pure mapping shared by the adapters: a framework's tool call → action fields, a
conversation turn → its text, and pending warnings → the text put into the model's
context."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from loopwarden.errors import EventDecodeError
from loopwarden.schemas import codec
from loopwarden.schemas.refusals import refused
from loopwarden.schemas.tool_reads import read_fields
from loopwarden.schemas.warnings import LoopWarning

CONTEXT_HEADER = "[loopwarden] Loop warning — read before your next step:"
STOP_HEADER = "[loopwarden] This run was stopped: it kept repeating itself."
MEMORY_HEADER = "[loopwarden] What earlier runs learned that fits this task (best first):"
"""Opens the memories a run's note starts with (``adapters.memory_scope``)."""

SAID_ACTION = "message"
"""The action type of the agent's own message turn (an answer without a tool call)."""
HEARD_ACTION = "user"
"""The action type of the counterpart's turn (what the person said to the agent)."""


def _json_safe(value: Any) -> Any:
    return codec.loads(codec.dumps(value, default=str))


def canonical_args(args: Any) -> dict[str, Any]:
    """Tool arguments as a JSON object: a dict as it is, a JSON object string parsed,
    anything else under ``input``."""
    if isinstance(args, str):
        try:
            parsed = codec.loads(args) if args.strip() else {}
        except EventDecodeError:
            return {"input": args}
        return parsed if isinstance(parsed, dict) else {"input": parsed}
    if args is None:
        return {}
    if hasattr(args, "model_dump"):
        args = args.model_dump(mode="json")
    safe = _json_safe(args)
    return safe if isinstance(safe, dict) else {"input": safe}


def result_text(result: Any) -> str | None:
    """What a tool returned, as text (the publisher digests and truncates it)."""
    if result is None:
        return None
    if isinstance(result, str):
        return result
    if isinstance(result, bytes):
        return result.decode(errors="replace")
    content = getattr(result, "content", None)  # a framework message wrapping the output
    if isinstance(content, str):
        return content
    try:
        return codec.dumps_sorted(result, default=str).decode()
    except TypeError:
        return str(result)


def turn_text(content: Any) -> str | None:
    """A conversation turn's text: a string as it is, or the text parts of a list of
    content blocks (LangChain's ``{"type": "text"}``, the Responses API's
    ``input_text``/``output_text``, objects with a ``text`` or ``content`` string),
    joined by blank lines; None when the turn has no text (images, tool calls only)."""
    if content is None:
        return None
    if isinstance(content, str):
        return content if content.strip() else None
    if not isinstance(content, list | tuple):
        content = [content]
    parts: list[str] = []
    for block in content:
        text = block if isinstance(block, str) else None
        if isinstance(block, dict) and isinstance(block.get("text"), str):
            text = block["text"]
        elif text is None:
            found = getattr(block, "text", None)
            found = found if isinstance(found, str) else getattr(block, "content", None)
            text = found if isinstance(found, str) else None
        if text and text.strip():
            parts.append(text)
    return "\n\n".join(parts) or None


def is_injected(text: str) -> bool:
    """Whether a user-role turn is loopwarden's own warning, put there by an adapter."""
    return text.lstrip().startswith(CONTEXT_HEADER)


def tool_call_fields(
    args: Any,
    *,
    result: Any = None,
    error: BaseException | str | None = None,
    tool_call_id: str | None = None,
    response_id: str | None = None,
    duration_ms: float | None = None,
    tool: str | None = None,
    rejected: bool | None = None,
) -> dict[str, Any]:
    """The payload fields of one tool call's action event (``action_type`` aside); with
    ``tool`` (its name), a call that reads a file carries ``read``
    (:mod:`~loopwarden.schemas.tool_reads`). A failed call is ``rejected`` when the
    error is a refusal (:func:`~loopwarden.schemas.refusals.refused`), or as told."""
    params = canonical_args(args)
    fields: dict[str, Any] = {"params": params, "success": error is None}
    read = None if tool is None else read_fields(tool, params)
    if read is not None:
        fields["read"] = read
    if error is not None:
        fields["error_message"] = str(error)[:2000] or type(error).__name__
        if rejected if rejected is not None else refused(error):
            fields["rejected"] = True
    text = result_text(result)
    if text is not None:
        fields["result"] = text
    for name, value in (
        ("tool_call_id", tool_call_id),
        ("response_id", response_id),
        ("duration_ms", duration_ms),
    ):
        if value is not None:
            fields[name] = value
    return fields


def context_text(warnings: Sequence[LoopWarning]) -> str:
    """The text injected into the model's next request: each warning's timeline message."""
    lines = [CONTEXT_HEADER]
    for warning in warnings:
        lines.append(f"- ({warning.level.value}) {warning.timeline_message}")
    return "\n".join(lines)


def stop_text(warning: LoopWarning) -> str:
    """Why the run was stopped, for the framework's final message or refusal: the
    warning's reason as a sentence of its own (capitalised, with its full stop)."""
    reason = warning.reason.strip()
    sentence = reason[:1].upper() + reason[1:]
    if sentence and sentence[-1] not in ".!?。":
        sentence += "."
    return f"{STOP_HEADER} {sentence}"
