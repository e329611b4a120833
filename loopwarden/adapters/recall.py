"""What earlier runs learned that fits a run's task, asked of a worker once per run.

With ``adapters.memory_scope`` set, an adapter asks the worker's memory search (the
analyst's ranking, :func:`~loopwarden.streams.client.memory_search.search_memories`)
with the run's request and puts the memories in front of the model's calls, as
experience advice is put in front of a task's first step.
"""

from __future__ import annotations

from loopwarden.settings import Settings
from loopwarden.streams.client.memory_search import search_memories

TIMEOUT_S = 2.0
"""How long a run's start waits for the worker's answer at most."""


def memories_for(settings: Settings, task: str | None) -> list[str]:
    """The contents of the memories that fit ``task``, best first ([] when off or no
    task); raises :class:`~loopwarden.errors.LoopwardenError` when no worker answers."""
    cfg = settings.adapters
    if cfg.memory_scope is None or not task or not task.strip():
        return []
    found = search_memories(
        task,
        scope=cfg.memory_scope,
        budget_bytes=cfg.memory_budget_bytes,
        url=cfg.worker_url,
        settings=settings,
        timeout_s=TIMEOUT_S,
    )
    return [str(item["content"]) for item in found.memories if item.get("content")]
