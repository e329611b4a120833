"""Bulk import of memories: redact → vectors → append, without the per-write checks.

For loading memories a team already has (an export, another store, a replayed
topic). Each memory is redacted and scored like a stream write and gets the same
id (from its event id), so importing a file twice stores nothing twice. What the
write path checks per memory — duplicates and contradictions among its nearest
neighbours, one vector query each — is left to the maintenance cycle, whose
consolidation and conflict upkeep sweep the table; an import therefore runs at
LanceDB's append speed instead of the write path's query speed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from loopwarden.agents.memory.embedding import Embedder
from loopwarden.agents.memory.rows import (
    content_vectors,
    new_rows_table,
    outcome_of,
    questions_vectors,
)
from loopwarden.schemas.memory import MemoryWrite
from loopwarden.settings import MemorySettings
from loopwarden.storage.memory_table import MemoryTable


@dataclass
class ImportCounts:
    """What one import call did."""

    imported: int = 0
    already_stored: int = 0


class MemoryImporter:
    """Appends batches of memory writes to a :class:`MemoryTable`."""

    def __init__(self, table: MemoryTable, embedder: Embedder, settings: MemorySettings) -> None:
        self.table = table
        self.embedder = embedder
        self.cfg = settings

    def import_batch(self, writes: Sequence[MemoryWrite], now: float) -> ImportCounts:
        """Store the writes not stored yet (by id); later duplicates in the batch count once."""
        outcomes = self.import_writes(writes, now)
        imported = sum(o["status"] == "stored" for o in outcomes)
        return ImportCounts(imported=imported, already_stored=len(outcomes) - imported)

    def import_writes(self, writes: Sequence[MemoryWrite], now: float) -> list[dict[str, Any]]:
        """Store the writes not stored yet (by id); one memory-outcomes record per write:
        ``stored`` with ``checks: "deferred"``, or ``already_stored``."""
        writes = [w.redacted() for w in writes]  # a no-op for what the validator redacted
        ids = [w.memory_id for w in writes]
        stored = self.table.existing_ids(list(dict.fromkeys(ids)))
        fresh: dict[str, int] = {}  # memory id → the first write of it not stored yet
        for i, memory_id in enumerate(ids):
            if memory_id not in stored:
                fresh.setdefault(memory_id, i)
        firsts = set(fresh.values())
        if firsts:
            new = [writes[i] for i in sorted(firsts)]
            vectors = content_vectors(new, self.embedder)
            asked = questions_vectors(new, vectors, self.embedder)
            rows = new_rows_table(
                new, list(fresh), vectors, asked, self.cfg, now, self.table.table.schema
            )
            self.table.append(rows)  # ids checked above
            trust = dict(zip(fresh, rows.column("trust").to_pylist(), strict=True))
        outcomes = []
        for i, write in enumerate(writes):
            outcome = outcome_of(write, ids[i])
            if i in firsts:
                outcome.update(trust=trust[ids[i]], checks="deferred")
            else:  # stored before, or an earlier write of the batch
                outcome["status"] = "already_stored"
            outcomes.append(outcome)
        return outcomes
