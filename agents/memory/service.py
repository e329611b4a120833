"""One place that opens a memory store: table, embedder, writer, search, context."""

from __future__ import annotations

import asyncio
import threading
import time
from functools import cached_property

from loopwarden.agents.memory.embedding import Embedder, make_embedder
from loopwarden.agents.memory.importer import MemoryImporter
from loopwarden.agents.memory.judge import ConflictJudge
from loopwarden.agents.memory.retrieval import MemorySearch, SearchResult
from loopwarden.agents.memory.writer import MemoryWriter
from loopwarden.settings import MemorySettings
from loopwarden.storage.boundary import StorageBoundary, boundary_for
from loopwarden.storage.memory_table import MemoryTable


class MemoryService:
    """Lazily opened memory components (the embedder loads its weights on first use)."""

    def __init__(
        self,
        settings: MemorySettings,
        embedder: Embedder | None = None,
        judge: ConflictJudge | None = None,
        *,
        prewarm: bool = False,
        background_upkeep: bool = False,
    ) -> None:
        self.settings = settings
        self.prewarm = prewarm  # a long-lived worker loads the indexes when it opens them
        self.background_upkeep = background_upkeep  # the worker: its leader keeps indexes
        self._embedder = embedder
        self.judge = judge
        self.lock = threading.Lock()  # LanceDB work runs in threads, one at a time

    @cached_property
    def embedder(self) -> Embedder:
        """The configured embedder."""
        return self._embedder or make_embedder(self.settings)

    @cached_property
    def table(self) -> MemoryTable:
        """The LanceDB tables."""
        table = MemoryTable(
            self.settings.uri,
            self.embedder.dims,
            self.settings.table,
            read_consistency_s=self.settings.read_consistency_s,
            indexes=self.settings.index,
            upkeep="background" if self.background_upkeep else "inline",
        )
        if self.prewarm:
            table.indexes.prewarm()
        return table

    @property
    def boundary(self) -> StorageBoundary:
        """Where a LanceDB failure of this store is understood (away, or the call's fault)."""
        return boundary_for(self.settings.uri)

    @cached_property
    def writer(self) -> MemoryWriter:
        """The write path."""
        return MemoryWriter(self.table, self.embedder, self.settings, self.judge)

    @cached_property
    def importer(self) -> MemoryImporter:
        """The bulk path (writes appended, checks left to maintenance)."""
        return MemoryImporter(self.table, self.embedder, self.settings)

    @cached_property
    def search(self) -> MemorySearch:
        """The read path."""
        return MemorySearch(self.table, self.embedder, self.settings)

    def recall(self, query: str, scope: str, budget_bytes: int) -> SearchResult | None:
        """The memories for ``query`` within ``budget_bytes`` (an access, as reading them
        is), inside the storage boundary: a store that is away raises as writes do.
        None while the store is empty."""
        with self.lock, self.boundary.calls("memory search"):
            if self.table.count() == 0:
                return None
            return self.search.search(
                query, scope=scope, budget_bytes=budget_bytes, now=time.time()
            )


class LanceMemoryContext:
    """The analyst's memory seam filled from LanceDB (seed 000 §1.3 stage 3)."""

    def __init__(self, service: MemoryService, scope: str = "default") -> None:
        self.service = service
        self.scope = scope

    async def context(self, loop_id: str, query: str, budget_bytes: int) -> str:
        """Memories for ``query`` within ``budget_bytes`` (2/5/10 KB by reflection level)."""

        def run() -> str:
            # inside the storage boundary, as writes are: a store that is away pauses
            # the analyst's partition (and retries the request), it does not fail it
            found = self.service.recall(query, self.scope, budget_bytes)
            return "" if found is None else found.text

        return await asyncio.to_thread(run)
