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

from loopwarden.agents.memory.embedding import Embedder
from loopwarden.agents.memory.writer import content_vectors, new_row, questions_vectors
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
        by_id = {
            w.payload.memory_id or derived_id("memory", w.payload.scope, w.event_id): w
            for w in writes
        }
        stored = self.table.existing_ids(list(by_id))
        fresh = [(memory_id, w) for memory_id, w in by_id.items() if memory_id not in stored]
        counts = ImportCounts(imported=len(fresh), already_stored=len(writes) - len(fresh))
        if not fresh:
            return counts
        payloads = [w.payload for _, w in fresh]
        contents = [redact_text(p.content) for p in payloads]
        questions = [[redact_text(q) for q in p.potential_questions] for p in payloads]
        vectors = content_vectors([w for _, w in fresh], contents, self.embedder)
        asked = questions_vectors(questions, vectors, self.embedder)
        rows = [
            new_row(
                write,
                memory_id,
                contents[i],
                [redact_text(t) for t in write.payload.tags],
                questions[i],
                vectors[i],
                asked[i],
                self.cfg,
                now,
            )
            for i, (memory_id, write) in enumerate(fresh)
        ]
        self.table.append(rows_to_arrow(rows, self.table.table.schema))  # ids checked above
        return counts
