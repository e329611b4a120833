"""What every HTTP endpoint on the worker's web server shares: bounded JSON bodies,
bearer tokens, and errors answered as readable JSON."""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from typing import Any

from faust.web import Request, Response, View
from pydantic import SecretStr

from loopwarden.errors import ApiError
from loopwarden.schemas import codec


async def read_json_body(request: Request, limit: int) -> tuple[bytes, dict[str, Any]]:
    """The raw body and its JSON object; 413 when over ``limit`` bytes, 400 when not an
    object (``api.max_body_bytes`` is the usual limit)."""
    declared = request.headers.get("Content-Length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ApiError(413, f"request body over {limit} bytes (api.max_body_bytes)")
    try:
        raw = await request.read()
    except Exception as exc:  # aiohttp's own limit, a broken upload
        raise ApiError(413, f"request body not readable: {exc}") from exc
    if len(raw) > limit:
        raise ApiError(413, f"request body over {limit} bytes (api.max_body_bytes)")
    try:
        data = codec.loads(raw) if raw else None
    except Exception as exc:
        raise ApiError(400, f"request body is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ApiError(400, "request body must be a JSON object")
    return raw, data


def check_bearer(request: Request, token: SecretStr | None, what: str) -> None:
    """401 unless the request carries ``Authorization: Bearer <token>`` (never from the
    query string; compared in constant time)."""
    supplied = request.headers.get("Authorization", "")
    expected = f"Bearer {token.get_secret_value()}" if token else None
    if expected is None or not hmac.compare_digest(supplied.encode(), expected.encode()):
        raise ApiError(401, f"{what} need 'Authorization: Bearer <token>'")


async def answer_json(
    view: View,
    handler: Callable[[], Awaitable[Any]],
    headers: dict[str, str] | None = None,
) -> Response:
    """Run ``handler``: a dict as JSON, a response as it is, an :class:`ApiError` as
    ``{"status": "error", "message", "errors"}`` with its status."""
    try:
        result = await handler()
    except ApiError as exc:
        error = {"status": "error", "message": exc.reason, "errors": exc.errors}
        return view.json(error, status=exc.status, headers=headers)
    return view.json(result, headers=headers) if isinstance(result, dict) else result
