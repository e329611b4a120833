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
from loopwarden.agents.memory.rows import (
    column_question_vectors,
    column_rows_table,
    column_vectors,
    content_vectors,
    new_rows_table,
    outcome_of,
    questions_vectors,
)
from loopwarden.schemas.ids import derived_ids
from loopwarden.schemas.memory import MemoryWrite
from loopwarden.schemas.memory_columns import MemoryColumns, concat
from loopwarden.schemas.memory_outcomes import OUTCOME_TYPE, stored_outcome
from loopwarden.schemas.outputs import MemoryOutcomeRecord
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

    def import_writes(self, writes: Sequence[MemoryWrite], now: float) -> list[MemoryOutcomeRecord]:
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
                outcome["trust"], outcome["checks"] = trust[ids[i]], "deferred"
            else:  # stored before, or an earlier write of the batch
                outcome["status"] = "already_stored"
            outcomes.append(outcome)
        return outcomes

    def import_columns(
        self, batches: Sequence[MemoryColumns], now: float
    ) -> list[list[MemoryOutcomeRecord]]:
        """:meth:`import_writes` for checked column batches (Arrow records), in one
        append; the outcomes of each batch, row for row. A row whose vector has another
        size than the table's is ``rejected`` with the reason, the rest are stored."""
        whole = concat(batches)
        if not whole.redacted:
            raise ValueError("memory columns must be redacted before they are stored")
        if not len(whole):
            return [[] for _ in batches]
        ids = whole.memory_ids()
        stored = self.table.existing_ids(list(dict.fromkeys(ids)))
        vectors, wrong = column_vectors(whole, self.embedder)
        fresh: dict[str, int] = {}
        for i, memory_id in enumerate(ids):
            if memory_id not in stored and not wrong[i]:
                fresh.setdefault(memory_id, i)
        trust: list[float] = []
        if fresh:
            rows = list(fresh.values())
            if len(rows) == len(whole):  # the bulk case: every row is new, nothing to take
                new, kept = whole, vectors
            else:
                new = MemoryColumns(whole.table.take(rows), whole.had_secrets[rows])
                kept = vectors[rows]
            asked = column_question_vectors(new, kept, self.embedder)
            data = column_rows_table(
                new, list(fresh), kept, asked, self.cfg, now, self.table.table.schema
            )
            self.table.append(data)  # ids checked above
            trust = data.column("trust").to_pylist()
        outcomes = _column_outcomes(whole, ids, dict(zip(fresh.values(), trust, strict=True)))
        for i in map(int, wrong.nonzero()[0]):
            outcomes[i]["status"], outcomes[i]["reason"] = "rejected", self._wrong_size(whole, i)
        split, start = [], 0
        for batch in batches:
            split.append(outcomes[start : start + len(batch)])
            start += len(batch)
        return split

    def _wrong_size(self, columns: MemoryColumns, row: int) -> str:
        size = len(columns.table.column("embedding")[row])
        event_id = columns.table.column("event_id")[row].as_py()
        return (
            f"ValueError: event {event_id}: embedding has {size} dimensions, "
            f"the memory table {self.embedder.dims}"
        )


def _column_outcomes(
    columns: MemoryColumns, ids: list[str], trust_of: dict[int, float]
) -> list[MemoryOutcomeRecord]:
    """One memory outcome per row: ``stored`` (rows in ``trust_of``) or
    ``already_stored``, as :func:`outcome_of` builds them for a write."""
    event_ids = columns.table.column("event_id").to_pylist()
    scopes = columns.table.column("scope").to_pylist()
    secrets = columns.had_secrets.tolist()
    outcome_ids = derived_ids(OUTCOME_TYPE, event_ids)
    outcomes = []
    for i, event_id in enumerate(event_ids):
        outcome = stored_outcome(event_id, scopes[i], ids[i], secrets[i], outcome_id=outcome_ids[i])
        if i in trust_of:
            outcome["trust"], outcome["checks"] = trust_of[i], "deferred"
        else:  # stored before, or an earlier row of the batch
            outcome["status"] = "already_stored"
        outcomes.append(outcome)
    return outcomes
