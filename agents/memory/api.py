"""``GET /memory/search``: an agent's memories, ranked as the worker ranks them.

The light client has no LanceDB: it asks a worker that runs the memory role
(:func:`loopwarden.streams.client.memory_search.search_memories`, ``loopwarden memory
search --worker URL``). The answer is the very search the analyst's memory context
uses (intent routing, hybrid ranking, the byte budget), and counts as an access as
that does. With ``api.token`` set the token is needed: memories are what agents learned.
"""

from __future__ import annotations

import asyncio
from typing import Any

from faust.web import Request, Response, View

from loopwarden.agents.memory.service import MemoryService
from loopwarden.errors import ApiError
from loopwarden.streams.runtime.app import LoopwardenApp
from loopwarden.streams.runtime.web_api import answer_json, check_bearer

PATH = "/memory/search"
MAX_BUDGET_BYTES = 64 * 1024


def search_params(query: dict[str, str]) -> tuple[str, str, int]:
    """(question, scope, budget in bytes) of a request's query string; 400 when wrong."""
    question = (query.get("q") or "").strip()
    if not question:
        raise ApiError(400, "give the question as ?q=…")
    try:
        budget = int(query.get("budget", "4096"))
    except ValueError as exc:
        raise ApiError(400, f"budget must be a number of bytes, not {query['budget']!r}") from exc
    if not 1 <= budget <= MAX_BUDGET_BYTES:
        raise ApiError(400, f"budget must be between 1 and {MAX_BUDGET_BYTES} bytes")
    return question, query.get("scope") or "default", budget


def register_memory_api(app: LoopwardenApp, service: MemoryService) -> None:
    """Serve ``GET /memory/search?q=…&scope=…&budget=…`` on the worker's web server."""
    settings = app.loopwarden

    def search(question: str, scope: str, budget: int) -> dict[str, Any]:
        found = service.recall(question, scope, budget)
        if found is None:
            return {"intent": None, "content_bytes": 0, "memories": [], "text": ""}
        return {
            "intent": found.intent,
            "content_bytes": found.content_bytes,
            "memories": list(found.memories),
            "text": found.text,
        }

    @app.page(PATH)
    class MemorySearch(View):
        async def get(self, request: Request) -> Response:
            async def handle() -> dict[str, Any]:
                if settings.api.token is not None:
                    check_bearer(request, settings.api.token, "memory searches")
                question, scope, budget = search_params(dict(request.query))
                answer = await asyncio.to_thread(search, question, scope, budget)
                return {"query": question, "scope": scope, **answer}

            return await answer_json(self, handle)
