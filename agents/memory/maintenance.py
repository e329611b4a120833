"""The maintenance cycle (seed 002 §1, §6, §10), vectorised over the table's columns.

1. effective strength of every live memory (age from its last access, else its
   creation) → promote (≥ 0.7) / demote (≤ 0.3); soft-delete when strength < 0.1
   and the last access (else the creation) is more than 60 days ago; the changes
   are written as one partial update per kind;
2. conflict upkeep: up to ``conflict_scan_limit`` live memories without a conflict
   relation, taken in (updated_at, id) order from where the previous cycle
   stopped, are checked against their neighbours (one multi-vector query per
   chunk); contradictions become ``contradicts`` relations. Successive cycles
   sweep the whole table; the writer already checked each memory when it came;
3. consolidation: memories sharing an entity, created within 45 days of each
   other, with cosine ≥ the content threshold are merged into a new memory (the
   anchor's content, max importance and trust, union of entities and tags plus
   ``consolidated``, the oldest member's creation time) that ``supersedes`` them.
   Similarities come from one matrix product per entity group (the newest
   ``consolidation_group_limit`` members of a larger group). The members are
   soft-deleted (the relation keeps them findable by id): search returns the
   merged memory once, and the next cycle has nothing to merge;
4. the indexes take in what changed and small files are compacted.

A cycle converges: run twice on an unchanged store, the second reports zeros
and changes nothing. The report has the seed's six counts.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from loopwarden.agents.memory.scoring import contradiction_confidence, effective_strength_batch
from loopwarden.schemas.ids import derived_id
from loopwarden.settings import MemorySettings
from loopwarden.storage.memory_table import MemoryTable

log = logging.getLogger(__name__)
DAY = 86_400.0
CURSOR = "conflict_upkeep_cursor"
CHUNK = 1_000  # memories per neighbour query in conflict upkeep


@dataclass
class MaintenanceReport:
    """The seed's report."""

    promoted: int = 0
    demoted: int = 0
    decayed: int = 0
    conflicts_found: int = 0
    conflicts_resolved: int = 0
    consolidated: int = 0

    def to_json_dict(self) -> dict[str, int]:
        """The counts as a dict."""
        return asdict(self)

    def changed(self) -> bool:
        """Whether the cycle changed any memory."""
        return any(asdict(self).values())

    def line(self) -> str:
        """The cycle for the worker's log: its non-zero counts in words."""
        counts = [f"{n} {name.replace('_', ' ')}" for name, n in asdict(self).items() if n]
        return ", ".join(counts) or "nothing to do"


class Maintenance:
    """Runs maintenance over a :class:`MemoryTable`."""

    def __init__(self, table: MemoryTable, settings: MemorySettings) -> None:
        self.table = table
        self.cfg = settings
        self.window_days = settings.consolidation_window_days
        self.conflict_scan_limit = settings.conflict_scan_limit
        self.group_limit = settings.consolidation_group_limit

    def run(self, now: float) -> MaintenanceReport:
        """One cycle."""
        report = MaintenanceReport()
        took = {}
        for name, step in (
            ("forgetting", lambda: self._forgetting(now, report)),
            ("conflict upkeep", lambda: self._conflicts(report)),
            ("consolidation", lambda: self._consolidate(now, report)),
            ("index upkeep", self.table.indexes.optimize),
        ):
            started = time.perf_counter()
            step()
            took[name] = time.perf_counter() - started
        log.info(
            "memory maintenance: %s",
            ", ".join(f"{name} {seconds:.1f} s" for name, seconds in took.items()),
        )
        return report

    def _forgetting(self, now: float, report: MaintenanceReport) -> None:
        cols = self.table.columns(
            [
                "id",
                "importance",
                "trust",
                "access_count",
                "decay_rate",
                "created_at",
                "last_access_at",
                "layer",
            ],
            where="deleted = false",
        )
        if cols.num_rows == 0:
            return

        def floats(name: str) -> np.ndarray:
            return cols.column(name).to_numpy(zero_copy_only=False).astype(np.float64)

        accessed = floats("last_access_at")
        accessed = np.where(np.isnan(accessed), floats("created_at"), accessed)
        age = np.maximum((now - accessed) / DAY, 0.0)
        long_term = pc.equal(cols.column("layer"), "long_term").to_numpy(zero_copy_only=False)
        strength = effective_strength_batch(
            floats("importance"),
            floats("trust"),
            floats("access_count"),
            floats("decay_rate"),
            age,
            long_term,
            self.cfg,
        )
        # seed 002 §6: the age that counts is the time since the last access
        decayed = (strength < self.cfg.soft_delete_strength) & (age > self.cfg.soft_delete_age_days)
        promote = (strength >= self.cfg.promote_threshold) & ~long_term & ~decayed
        short_term = pc.equal(cols.column("layer"), "short_term").to_numpy(zero_copy_only=False)
        demote = (strength <= self.cfg.demote_threshold) & ~short_term & ~decayed
        ids = cols.column("id")
        for mask, column, value in (
            (promote, "layer", "long_term"),
            (demote, "layer", "short_term"),
            (decayed, "deleted", True),
        ):
            chosen = ids.filter(pa.array(mask))
            if len(chosen):
                self.table.set_column(chosen, column, value)
        report.promoted, report.demoted = int(promote.sum()), int(demote.sum())
        report.decayed = int(decayed.sum())

    def _conflicts(self, report: MaintenanceReport) -> None:
        related = set(
            self.table.relations.search()
            .where("type = 'contradicts'")
            .select(["src"])
            .limit(max(self.table.relations.count_rows(), 1))
            .to_arrow()
            .column("src")
            .to_pylist()
        )
        cols = self.table.columns(["id", "updated_at"], where="deleted = false")
        if cols.num_rows == 0:
            return
        ids = np.asarray(cols.column("id").to_pylist(), dtype=object)
        updated = cols.column("updated_at").to_numpy(zero_copy_only=False).astype(np.float64)
        order = np.lexsort((ids, updated))
        cursor_at, cursor_id = self.table.state(CURSOR) or (float("-inf"), "")
        after = (updated[order] > cursor_at) | (
            (updated[order] == cursor_at) & (ids[order] > cursor_id)
        )
        pending = [i for i in order[after] if ids[i] not in related][: self.conflict_scan_limit]
        if not pending:
            self.table.set_state(CURSOR, None)  # swept: the next cycle starts over
            return
        chosen = [str(ids[i]) for i in pending]
        for start in range(0, len(chosen), CHUNK):
            self._check_conflicts(chosen[start : start + CHUNK], report)
        last = pending[-1]
        self.table.set_state(CURSOR, (float(updated[last]), str(ids[last])))

    def _check_conflicts(self, ids: list[str], report: MaintenanceReport) -> None:
        rows = self.table.get(ids, columns=("id", "scope", "content", "created_at", "vector"))
        by_scope: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            by_scope.setdefault(row["scope"], []).append(row)
        found = []
        for scope, members in by_scope.items():
            vectors = np.stack([m["vector"] for m in members])
            nearby = self.table.neighbours_many(
                vectors, scope, self.cfg.candidate_limit, ("id", "content", "created_at")
            )
            for row, neighbours in zip(members, nearby, strict=True):
                for other, similarity in neighbours:
                    if other["id"] == row["id"] or other["created_at"] > row["created_at"]:
                        continue
                    confidence = contradiction_confidence(
                        row["content"], other["content"], similarity, self.cfg
                    )
                    if confidence >= self.cfg.conflict_threshold:
                        found.append(
                            (
                                row["id"],
                                other["id"],
                                "contradicts",
                                confidence,
                                "maintenance: heuristic conflict upkeep",
                            )
                        )
        self.table.relate_many(found)
        report.conflicts_found += len(found)
        report.conflicts_resolved += len(found)

    def _consolidate(self, now: float, report: MaintenanceReport) -> None:
        cols = self.table.columns(
            ["id", "scope", "entity_refs", "created_at", "tags", "vector"],
            where="deleted = false AND (tags IS NULL OR NOT array_has(tags, 'consolidated'))",
        )
        if cols.num_rows == 0:
            return
        entities = cols.column("entity_refs").combine_chunks()
        flat = pc.list_flatten(entities).to_numpy(zero_copy_only=False)
        if len(flat) == 0:
            return
        owner = pc.list_parent_indices(entities).to_numpy()
        ids = cols.column("id").to_pylist()
        scopes = cols.column("scope").to_pylist()
        created = cols.column("created_at").to_numpy(zero_copy_only=False).astype(np.float64)
        vectors = cols.column("vector").combine_chunks().flatten().to_numpy()
        vectors = vectors.reshape(cols.num_rows, -1)
        window = self.window_days * DAY
        order = np.argsort(flat, kind="stable")  # rows grouped by entity, in table order
        bounds = np.flatnonzero(flat[order][1:] != flat[order][:-1]) + 1
        seen: set[int] = set()
        pairs: list[tuple[int, int]] = []
        for group in np.split(order, bounds):
            members = np.unique(owner[group])
            if len(members) < 2:
                continue
            if len(members) > self.group_limit:  # the newest members of a large group
                members = np.sort(members[np.argsort(-created[members])[: self.group_limit]])
            similar = vectors[members] @ vectors[members].T
            close = np.abs(created[members][:, None] - created[members][None, :]) <= window
            left, right = np.nonzero(
                np.triu((similar >= self.cfg.consolidation_similarity) & close, k=1)
            )
            for a, b in zip(members[left], members[right], strict=True):
                if a in seen or b in seen or scopes[a] != scopes[b]:
                    continue
                seen.update((int(a), int(b)))
                pairs.append((int(a), int(b)))
        if not pairs:
            return
        full = {row["id"]: row for row in self.table.get([ids[i] for pair in pairs for i in pair])}
        merged = [self._merge([full[ids[a]], full[ids[b]]], now) for a, b in pairs]
        self.table.upsert([row for row, _ in merged])
        self.table.relate_many(
            [
                (row["id"], member["id"], "supersedes", 1.0, "consolidation")
                for row, members in merged
                for member in members
            ]
        )
        superseded = pa.array([member["id"] for _, members in merged for member in members])
        self.table.set_column(superseded, "deleted", True)
        self.table.set_column(superseded, "updated_at", now)
        report.consolidated = len(merged)

    def _merge(
        self, members: list[dict[str, Any]], now: float
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        ordered = sorted(
            members, key=lambda m: (m["importance"], m["trust"], m["created_at"]), reverse=True
        )
        anchor = dict(ordered[0])
        anchor.update(
            id=derived_id("consolidated", *sorted(m["id"] for m in members)),
            importance=max(m["importance"] for m in members),
            trust=max(m["trust"] for m in members),
            entity_refs=sorted({e for m in members for e in m["entity_refs"] or []}),
            tags=sorted({t for m in members for t in m["tags"] or []} | {"consolidated"}),
            corroborated_by=[],
            access_count=sum(m["access_count"] or 0 for m in members),
            last_access_at=max((m["last_access_at"] or 0.0 for m in members), default=0.0) or None,
            created_at=min(m["created_at"] for m in members),
            updated_at=now,
        )
        anchor.pop("_distance", None)
        return anchor, members
