"""The memory read path (seed 000 §3.3-3.5, seed 002 §2): recall, fuse, rank, select.

Recall: ``semantic`` (LanceDB vector search), ``full_text`` (LanceDB's native FTS
index) and ``entity`` (memories naming an entity the query mentions); fused with
reciprocal rank fusion (k = 60); ordered by the fused rank (``memory.rank_by =
"rrf"``, C.O.R.E. P.A.C.T. relevance plus keyword bonus breaking ties) or by that
relevance first (``"relevance"``, seed 000 §3.4); selected greedily within a byte
budget. The default follows seed 002: on the labelled retrieval set the fused rank
recalls more than relevance-first ordering, whose keyword bonus lifts lexical
distractors above the semantic hit when scores are alike.
Retrieval touches access count and last access of what it returns.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from loopwarden.agents.memory.embedding import Embedder
from loopwarden.agents.memory.routing import plan, strip_intent_markers
from loopwarden.agents.memory.scoring import (
    DIMENSIONS,
    keywords,
    reciprocal_rank_fusion,
    relevance,
    relevance_batch,
    top_k,
)
from loopwarden.settings import MemorySettings
from loopwarden.storage.memory_schema import quote, read_card
from loopwarden.storage.memory_table import MemoryTable

STRATEGIES = ("semantic", "full_text", "entity", "causal_trace")
RESULT_COLUMNS = (
    "id",
    "content",
    "tags",
    "potential_questions",
    "entity_refs",
    "trust",
    "layer",
    "memory_type",
    "created_at",
    "deleted",
    *DIMENSIONS,
)
"""What ranking and the answer read of a memory (never the vectors): read once, for
the union of what the strategies found, by the row ids they returned."""
CARD_READ = ("id", "card", "trust", "layer", "deleted")
"""The same, read from a memory's card and the columns that change after it is stored:
five columns instead of seventeen (LanceDB pays about 1 ms a column per random read)."""


def _row_ids(found: list[dict[str, Any]]) -> dict[str, int]:
    return {row["id"]: row["_rowid"] for row in found}


def entity_terms(query: str) -> list[str]:
    """Terms of ``query`` that may name an entity: raw words and normalized keywords."""
    raw = [w.strip(".,;:!?\"'()[]{}").lower() for w in query.split()]
    return list(dict.fromkeys([w for w in raw if w] + keywords(query)))


@dataclass
class SearchResult:
    """What a search selected, best first, and its size."""

    memories: list[dict[str, Any]] = field(default_factory=list)
    content_bytes: int = 0
    intent: str = "general"

    @property
    def text(self) -> str:
        """The selected memories as context text, one per line, conflicts said."""
        return "\n".join(f"- {m['content']}{_conflict_note(m)}" for m in self.memories)


def _conflict_note(memory: dict[str, Any]) -> str:
    if memory.get("outranked_by"):
        newer = memory.get("outranked_because") == "newer"
        return (
            " (conflicts with a newer memory above)"
            if newer
            else " (conflicts with an older, more trusted memory above)"
        )
    if memory.get("conflicts_with"):
        return " (contradicts a memory below)"
    return ""


def resolve_conflicts(
    ranked: list[dict[str, Any]], relations: list[dict[str, Any]], trust_margin: float
) -> list[dict[str, Any]]:
    """Order a contradicting pair within one answer, and mark both.

    The newer memory ranks above the one it contradicts unless the older has at
    least ``trust_margin`` more trust; the winner gets ``conflicts_with`` (ids),
    the loser ``outranked_by`` (an id) and is moved just below the winner.
    """
    by_id = {m["id"]: m for m in ranked}
    for relation in relations:
        if relation["type"] != "contradicts":
            continue
        a, b = by_id.get(relation["src"]), by_id.get(relation["dst"])
        if a is None or b is None or a is b:
            continue
        newer, older = (a, b) if (a["created_at"] or 0) >= (b["created_at"] or 0) else (b, a)
        older_wins = (older["trust"] or 0) - (newer["trust"] or 0) >= trust_margin
        winner, loser = (older, newer) if older_wins else (newer, older)
        winner.setdefault("conflicts_with", []).append(loser["id"])
        loser["outranked_by"] = winner["id"]
        loser["outranked_because"] = "trust" if older_wins else "newer"
    ordered = [m for m in ranked if "outranked_by" not in m]
    for loser in (m for m in ranked if "outranked_by" in m):
        winner_at = next(
            (i for i, m in enumerate(ordered) if m["id"] == loser["outranked_by"]), len(ordered) - 1
        )
        ordered.insert(winner_at + 1, loser)
    return ordered


class MemorySearch:
    """Searches a :class:`MemoryTable`."""

    def __init__(self, table: MemoryTable, embedder: Embedder, settings: MemorySettings) -> None:
        self.table = table
        self.embedder = embedder
        self.cfg = settings
        self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="memory-search")

    def search(
        self,
        query: str,
        *,
        scope: str = "default",
        budget_bytes: int = 2048,
        per_strategy: int = 15,
        strategies: tuple[str, ...] | None = None,
        now: float | None = None,
    ) -> SearchResult:
        """Memories for ``query`` within ``budget_bytes`` of content.

        Without ``strategies`` the query's intent decides them (seed 002 §3).
        """
        route = plan(query)
        strategies = strategies or route.strategies
        lexical_text = strip_intent_markers(query) or query
        rankings: dict[str, list[str]] = {}
        found: dict[str, int] = {}  # every strategy's rows, by LanceDB row id

        # full text and entity recall run in threads while the query is embedded and
        # searched by vector: LanceDB answers them concurrently
        lexical_search = {
            "full_text": lambda: self.table.full_text(
                lexical_text, scope, per_strategy, row_ids=True
            ),
            "entity": lambda: self.table.with_entities(
                entity_terms(query), scope, per_strategy, row_ids=True
            ),
        }
        pending = {
            name: self._pool.submit(run)
            for name, run in lexical_search.items()
            if name in strategies
        }
        semantic: list[dict[str, Any]] = []
        if "semantic" in strategies or "causal_trace" in strategies:
            embed_query = getattr(self.embedder, "embed_query", self.embedder.embed)
            vector = embed_query([query])[0]
            nearest = self.table.neighbours(
                vector, scope, per_strategy, columns=("id",), row_ids=True
            )
            semantic = [row for row, _ in nearest]
            found.update(_row_ids(semantic))
            if "semantic" in strategies:
                rankings["semantic"] = [row["id"] for row in semantic]
        for name, future in pending.items():
            lexical_rows = future.result()
            found.update(_row_ids(lexical_rows))
            rankings[name] = [row["id"] for row in lexical_rows]
        if "causal_trace" in strategies:
            seeds = [row["id"] for row in semantic[:2]]
            rankings["causal_trace"] = self._causal_trace(seeds, lexical_text, scope, per_strategy)
        fused = reciprocal_rank_fusion(rankings, self.cfg.rrf_k)
        relations = self._pool.submit(self.table.relations_of, [i for i, _ in fused])
        rows = self._take_cards(found)  # one read for every strategy's rows
        missing = [i for i, _ in fused if i not in rows]  # ancestors found by causal trace
        for ancestor in self.table.get(missing, columns=RESULT_COLUMNS):
            rows[ancestor["id"]] = ancestor
        ranked = []
        for memory_id, rrf in fused:
            row = rows.get(memory_id)
            if row is None or row["deleted"]:
                continue
            wanted_type = route.filters.get("memory_type")
            if wanted_type and row["memory_type"] != wanted_type and strategies == route.strategies:
                continue
            score = relevance(
                {d: row[d] for d in DIMENSIONS},
                lexical_text,
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
                    "memory_type": row["memory_type"],
                    "created_at": row["created_at"],
                    "relevance": score,
                    "rrf": rrf,
                    "matched_by": [name for name, ids in rankings.items() if memory_id in ids],
                }
            )
        if route.filters.get("sort") == "recency":
            ranked.sort(key=lambda m: (-(m["created_at"] or 0.0), -m["relevance"], m["id"]))
        elif self.cfg.rank_by == "rrf":
            ranked.sort(key=lambda m: (-m["rrf"], -m["relevance"], m["id"]))
        else:
            ranked.sort(key=lambda m: (-m["relevance"], -m["rrf"], m["id"]))
        ranked = resolve_conflicts(ranked, relations.result(), self.cfg.conflict_trust_margin)
        result = SearchResult(intent=route.intent.value)
        for memory in ranked:
            size = len(memory["content"].encode())
            if result.content_bytes + size > budget_bytes:
                continue
            result.memories.append(memory)
            result.content_bytes += size
        if now is not None:
            self.table.touch([m["id"] for m in result.memories], now)
        return result

    def _take_cards(self, row_ids: dict[str, int]) -> dict[str, dict[str, Any]]:
        """The result columns of ``row_ids`` from their cards; a row stored before cards
        existed is read column by column."""
        rows: dict[str, dict[str, Any]] = {}
        uncarded: dict[str, int] = {}
        for memory_id, row in self.table.take(row_ids, CARD_READ).items():
            card = row.pop("card")
            if card is None:
                uncarded[memory_id] = row_ids[memory_id]
            else:
                rows[memory_id] = {**row, **read_card(card)}
        rows.update(self._take_in_parallel(uncarded))
        return rows

    def _take_in_parallel(self, row_ids: dict[str, int]) -> dict[str, dict[str, Any]]:
        """:meth:`MemoryTable.take` of the result columns in two halves at once: LanceDB
        pays about a millisecond per column of a random read, and the halves overlap."""
        if not row_ids:
            return {}
        halves = [RESULT_COLUMNS[0::2], RESULT_COLUMNS[1::2]]
        parts = [self._pool.submit(self.table.take, row_ids, half) for half in halves]
        rows: dict[str, dict[str, Any]] = {}
        for part in parts:
            for memory_id, row in part.result().items():
                rows.setdefault(memory_id, {}).update(row)
        return {i: row for i, row in rows.items() if row.keys() >= set(RESULT_COLUMNS)}

    def _causal_trace(self, seeds: list[str], lexical: str, scope: str, limit: int) -> list[str]:
        """Ancestors of the top two seeds along relations (depth 3); lexical fallback."""
        found: list[str] = []
        frontier = list(seeds)
        for _ in range(3):
            edges = self.table.relations_of(frontier)
            frontier = [
                e["dst"]
                for e in edges
                if e["src"] in frontier and e["dst"] not in found and e["dst"] not in seeds
            ]
            found.extend(dict.fromkeys(frontier))
            if not frontier:
                break
        return found[:limit] or [r["id"] for r in self.table.full_text(lexical, scope, limit)]


def rank_table(
    table: MemoryTable, settings: MemorySettings, *, scope: str | None = None, k: int = 100
) -> list[tuple[str, float]]:
    """The ``k`` most relevant live memories of a whole table (or one scope), by
    C.O.R.E. P.A.C.T. relevance, computed over Arrow columns with numpy (no per-row
    Python loop). The scan reads row ids, not the memory ids (a million strings
    cost more to read than the seven scores); only the best ``k`` ids are read."""
    where = "deleted = false" + (f" AND scope = {quote(scope)}" if scope is not None else "")
    columns = table.columns(list(DIMENSIONS), where=where, row_ids=True)
    ranked, best = _relevance_top_k(columns, settings, k)
    row_ids = [int(r) for r in columns.column("_rowid").to_numpy()[best]]
    ids = table.ids_of_row_ids(row_ids)
    if len(ids) < len(best):  # compacted between the scan and the read: by id instead
        columns = table.columns(["id", *DIMENSIONS], where=where)
        ranked, best = _relevance_top_k(columns, settings, k)
        names = columns.column("id").to_pylist()
        ids = {i: names[i] for i in best}
        row_ids = [int(i) for i in best]
    return [(ids[r], float(ranked[i])) for r, i in zip(row_ids, best, strict=True)]


def _relevance_top_k(
    columns: pa.Table, settings: MemorySettings, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Relevance of every row of score ``columns``, and the positions of the best ``k``."""
    if columns.num_rows == 0:
        return np.empty(0), np.empty(0, dtype=np.intp)
    scores = np.column_stack(
        [columns.column(d).to_numpy(zero_copy_only=False) for d in DIMENSIONS]
    ).astype(np.float64)
    ranked = relevance_batch(scores, cfg=settings)
    return ranked, top_k(ranked, k)
