"""The memory read path (seed 000 §3.3-3.5, seed 002 §2): recall, fuse, rank, select.

Recall: ``semantic`` (LanceDB vector search), ``full_text`` (LanceDB's native FTS
index) and ``entity`` (memories naming an entity the query mentions); fused with
reciprocal rank fusion (k = 60); ranked by C.O.R.E. P.A.C.T. relevance plus the
keyword bonus (RRF breaks ties); selected greedily within a byte budget.
Retrieval touches access count and last access of what it returns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loopwarden.agents.memory.embedding import Embedder
from loopwarden.agents.memory.scoring import (
    DIMENSIONS,
    keywords,
    reciprocal_rank_fusion,
    relevance,
)
from loopwarden.settings import MemorySettings
from loopwarden.storage.memory_table import MemoryTable

STRATEGIES = ("semantic", "full_text", "entity")


def entity_terms(query: str) -> list[str]:
    """Terms of ``query`` that may name an entity: raw words and normalized keywords."""
    raw = [w.strip(".,;:!?\"'()[]{}").lower() for w in query.split()]
    return list(dict.fromkeys([w for w in raw if w] + keywords(query)))


@dataclass
class SearchResult:
    """What a search selected, best first, and its size."""

    memories: list[dict[str, Any]] = field(default_factory=list)
    content_bytes: int = 0

    @property
    def text(self) -> str:
        """The selected memories as context text, one per line."""
        return "\n".join(f"- {m['content']}" for m in self.memories)


class MemorySearch:
    """Searches a :class:`MemoryTable`."""

    def __init__(self, table: MemoryTable, embedder: Embedder, settings: MemorySettings) -> None:
        self.table = table
        self.embedder = embedder
        self.cfg = settings

    def search(
        self,
        query: str,
        *,
        scope: str = "default",
        budget_bytes: int = 2048,
        per_strategy: int = 15,
        strategies: tuple[str, ...] = STRATEGIES,
        now: float | None = None,
    ) -> SearchResult:
        """Memories for ``query`` within ``budget_bytes`` of content."""
        rankings: dict[str, list[str]] = {}
        if "semantic" in strategies:
            vector = self.embedder.embed([query])[0]
            rankings["semantic"] = [
                row["id"] for row, _ in self.table.neighbours(vector, scope, per_strategy)
            ]
        if "full_text" in strategies:
            rankings["full_text"] = self.table.full_text(query, scope, per_strategy)
        if "entity" in strategies:
            rankings["entity"] = self.table.with_entities(entity_terms(query), scope, per_strategy)
        fused = reciprocal_rank_fusion(rankings, self.cfg.rrf_k)
        rows = {row["id"]: row for row in self.table.get([i for i, _ in fused])}
        ranked = []
        for memory_id, rrf in fused:
            row = rows.get(memory_id)
            if row is None or row["deleted"]:
                continue
            score = relevance(
                {d: row[d] for d in DIMENSIONS},
                query,
                row["content"],
                row["tags"] or [],
                row["potential_questions"] or [],
                self.cfg,
            )
            ranked.append(
                {
                    "id": memory_id,
                    "content": row["content"],
                    "tags": row["tags"] or [],
                    "entity_refs": row["entity_refs"] or [],
                    "trust": row["trust"],
                    "layer": row["layer"],
                    "relevance": score,
                    "rrf": rrf,
                    "matched_by": [name for name, ids in rankings.items() if memory_id in ids],
                }
            )
        ranked.sort(key=lambda m: (-m["relevance"], -m["rrf"], m["id"]))
        result = SearchResult()
        for memory in ranked:
            size = len(memory["content"].encode())
            if result.content_bytes + size > budget_bytes:
                continue
            result.memories.append(memory)
            result.content_bytes += size
        if now is not None:
            self.table.touch([m["id"] for m in result.memories], now)
        return result
