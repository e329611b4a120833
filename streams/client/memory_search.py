"""An agent's memories from the light client: ask a worker, get them ranked.

The client has no LanceDB and no embedder: a worker that runs the memory role
answers ``GET /memory/search`` with the very search the analyst's memory context uses
(intent routing, hybrid ranking, the byte budget). The standard library's HTTP client
is enough for one GET, so the client installs nothing more.

>>> found = search_memories("why did the deploy fail?", scope="ops")
>>> found.text                      # ready to put in front of the model
>>> [m["content"] for m in found.memories]
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from pydantic import BaseModel, Field

from loopwarden.errors import LoopwardenError
from loopwarden.settings import Settings

DEFAULT_WORKER_PORT = 6066
"""`loopwarden dev`'s web port, the default where ``web_port`` is not set."""


class FoundMemories(BaseModel):
    """A worker's answer: the memories ranked for the question, within the budget."""

    query: str
    scope: str
    intent: str | None = Field(None, description="How the question was read (causal, …).")
    content_bytes: int = 0
    memories: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Best first: content, relevance, rrf, matched_by, memory_id, …",
    )
    text: str = Field("", description="The memories as one text, as the analyst reads them.")


def worker_url(settings: Settings) -> str:
    """Where the worker's API answers by default: its web host and port on this machine."""
    host = settings.web_host or "127.0.0.1"
    return f"http://{host}:{settings.web_port or DEFAULT_WORKER_PORT}"


def search_memories(
    question: str,
    *,
    scope: str = "default",
    budget_bytes: int = 4096,
    url: str | None = None,
    settings: Settings | None = None,
    timeout_s: float = 10.0,
) -> FoundMemories:
    """The memories a worker ranks for ``question`` in ``scope`` (``url``: the worker's
    API, default :func:`worker_url`; the API token from ``LOOPWARDEN_API__TOKEN``)."""
    settings = settings or Settings()
    base = (url or worker_url(settings)).rstrip("/")
    query = urllib.parse.urlencode({"q": question, "scope": scope, "budget": budget_bytes})
    request = urllib.request.Request(f"{base}/memory/search?{query}")
    if settings.api.token is not None:
        request.add_header("Authorization", f"Bearer {settings.api.token.get_secret_value()}")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as answer:
            return FoundMemories.model_validate(json.loads(answer.read()))
    except urllib.error.HTTPError as exc:
        raise LoopwardenError(f"memory search at {base}: {_said(exc)}") from exc
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise LoopwardenError(
            f"cannot reach a worker's API at {base} ({reason}): start `loopwarden dev`, or "
            "give the URL of a worker that runs the memory role with its web port set"
        ) from exc


def _said(error: urllib.error.HTTPError) -> str:
    """The worker's own message of an error answer, else its HTTP status."""
    try:
        body = json.loads(error.read())
    except (ValueError, OSError):
        body = None
    if isinstance(body, dict) and body.get("message"):
        return f"{body['message']} (HTTP {error.code})"
    if error.code == 404:
        return "HTTP 404: that worker does not run the memory role, or serves no API"
    return f"HTTP {error.code} {error.reason}"
