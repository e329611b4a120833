"""The memory service a worker's capabilities share (memory, lessons, experience, analyst)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loopwarden.streams.runtime.resources import WorkerResources

if TYPE_CHECKING:
    from loopwarden.agents.memory.service import MemoryService


def shared_memory(resources: WorkerResources) -> MemoryService:
    """The worker's one memory service (LanceDB table, embedder, conflict judge), opened
    when a capability first asks for it: a worker without a memory role never opens it."""
    from loopwarden.agents.memory.judge import ConflictJudge
    from loopwarden.agents.memory.service import MemoryService

    settings = resources.settings
    return resources.shared(
        MemoryService,
        lambda: MemoryService(
            settings.memory,
            judge=ConflictJudge(settings.analyst),
            prewarm=True,
            background_upkeep=True,
        ),
    )
