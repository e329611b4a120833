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
from loopwarden.agents.memory.writer import (
    content_vectors,
    new_row,
    outcome_of,
    questions_vectors,
)
from loopwarden.schemas.ids import derived_id
from loopwarden.schemas.memory import MemoryWrite
from loopwarden.schemas.redaction import redact_text
from loopwarden.settings import MemorySettings
from loopwarden.storage.memory_table import MemoryTable, rows_to_arrow


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
        ids = [
            w.payload.memory_id or derived_id("memory", w.payload.scope, w.event_id) for w in writes
        ]
        stored = self.table.existing_ids(list(dict.fromkeys(ids)))
        fresh: dict[str, int] = {}  # memory id → the first write of it not stored yet
        for i, memory_id in enumerate(ids):
            if memory_id not in stored:
                fresh.setdefault(memory_id, i)
        firsts = list(fresh.values())
        payloads = [writes[i].payload for i in firsts]
        contents = [redact_text(p.content) for p in payloads]
        questions = [[redact_text(q) for q in p.potential_questions] for p in payloads]
        tags = [[redact_text(t) for t in p.tags] for p in payloads]
        outcome_at: dict[int, dict[str, Any]] = {}
        if firsts:
            vectors = content_vectors([writes[i] for i in firsts], contents, self.embedder)
            asked = questions_vectors(questions, vectors, self.embedder)
            rows = []
            for n, i in enumerate(firsts):
                rows.append(
                    new_row(
                        writes[i],
                        ids[i],
                        contents[n],
                        tags[n],
                        questions[n],
                        vectors[n],
                        asked[n],
                        self.cfg,
                        now,
                    )
                )
                outcome = outcome_of(writes[i], ids[i], contents[n], tags[n], questions[n])
                outcome.update(trust=rows[-1]["trust"], checks="deferred")
                outcome_at[i] = outcome
            self.table.append(rows_to_arrow(rows, self.table.table.schema))  # ids checked above
        outcomes = []
        for i, write in enumerate(writes):
            outcome = outcome_at.get(i)
            if outcome is None:  # stored before, or an earlier write of the batch
                outcome = outcome_of(write, ids[i], write.payload.content, [], [])
                outcome.update(status="already_stored", redacted=False)
            outcomes.append(outcome)
        return outcomes
