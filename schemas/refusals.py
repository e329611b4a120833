"""Which failures are refusals: the tool or harness turned the call away before it had
any effect (the event's ``rejected``), told apart the same way by every integration.

An exception is a refusal when its class, or one it derives from, is named in
:data:`REFUSAL_TYPES` (argument validation and the frameworks' "retry with other
arguments" signals), or when it carries an HTTP status from 400 to 499 other than
408 (timeout) and 429 (rate limit), which are worth retrying as they are.
"""

from __future__ import annotations

from typing import Any

REFUSAL_TYPES = frozenset(
    {
        "ValidationError",  # pydantic: the arguments do not fit the tool's schema
        "ModelRetry",  # Pydantic AI: the tool asks the model for other arguments
        "ToolRetryError",  # Pydantic AI's wrapper of it
        "ToolInvocationError",  # LangChain: a call its tool node could not invoke
        "ModelBehaviorError",  # OpenAI Agents SDK: arguments that are not the tool's JSON
        "JSONDecodeError",
        "SchemaError",
        "BadRequestError",
        "UnprocessableEntityError",
        "InvalidArgument",
        "InvalidArgumentError",
        # the TypeScript client's frameworks (it reads this list from constants.json)
        "ZodError",  # zod: the arguments do not fit the tool's schema
        "ToolInputParsingException",  # LangChain.js: input its tool could not parse
        "InvalidToolInputError",  # the AI SDK: input that is not the tool's
        "InvalidToolArgumentsError",  # the AI SDK, before version 5
        "NoSuchToolError",  # the AI SDK: a tool the model made up
    }
)
TRANSIENT_STATUSES = frozenset({408, 429})


def refused_status(status: Any) -> bool:
    """An HTTP status that refuses the request as sent (4xx, not 408 or 429)."""
    try:
        code = int(status)
    except (TypeError, ValueError):
        return False
    return 400 <= code <= 499 and code not in TRANSIENT_STATUSES


def refused_type(name: str | None) -> bool:
    """An exception type name (``pydantic_core.ValidationError`` or its last part) that
    is a refusal, or an HTTP 4xx status given as the type (``error.type: "404"``)."""
    if not name:
        return False
    return name.rsplit(".", 1)[-1] in REFUSAL_TYPES or refused_status(name)


def refused(error: BaseException | str | None) -> bool:
    """``error`` turned the call away before it had any effect (module docstring)."""
    if error is None or isinstance(error, str):
        return False
    if any(cls.__name__ in REFUSAL_TYPES for cls in type(error).__mro__):
        return True
    response = getattr(error, "response", None)
    status = getattr(error, "status_code", None) or getattr(response, "status_code", None)
    return refused_status(status)
