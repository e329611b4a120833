"""The maintenance cycle (seed 002 §1, §6, §10), vectorised over the table's columns.

1. effective strength of every live memory (age from its last access, else its
   creation) → promote (≥ 0.7) / demote (≤ 0.3); soft-delete when strength < 0.1
   and the last access (else the creation) is more than 60 days ago;
2. conflict upkeep: live memories without a conflict relation are checked against
   their neighbours, and contradictions found become ``contradicts`` relations;
3. consolidation: memories sharing an entity, created within 45 days of each
   other, with cosine ≥ the content threshold are merged into a new memory (the
   anchor's content, max importance and trust, union of entities and tags plus
   ``consolidated``, the oldest member's creation time) that ``supersedes`` them.
   The members are soft-deleted (the relation keeps them findable by id): search
   returns the merged memory once, and the next cycle has nothing to merge.

A cycle converges: run twice on an unchanged store, the second reports zeros
and changes nothing. The report has the seed's six counts.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass
from itertools import combinations
from typing import Any

import numpy as np

from loopwarden.agents.memory.scoring import (
    contradiction_confidence,
    cosine_similarity,
    effective_strength_batch,
)
from loopwarden.schemas.ids import derived_id
from loopwarden.settings import MemorySettings
from loopwarden.storage.memory_table import MemoryTable

DAY = 86_400.0


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


def _quote_list(ids: list[str]) -> str:
    return ", ".join("'" + i.replace("'", "''") + "'" for i in ids)


class Maintenance:
    """Runs maintenance over a :class:`MemoryTable`."""

    def __init__(self, table: MemoryTable, settings: MemorySettings) -> None:
        self.table = table
        self.cfg = settings
        self.window_days = settings.consolidation_window_days
        self.conflict_scan_limit = settings.conflict_scan_limit

    def run(self, now: float) -> MaintenanceReport:
        """One cycle."""
        report = MaintenanceReport()
        self._forgetting(now, report)
        self._conflicts(report)
        self._consolidate(now, report)
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
        data = cols.to_pydict()
        ids = np.array(data["id"])
        accessed = np.array(
            [
                a if a is not None else c
                for a, c in zip(data["last_access_at"], data["created_at"], strict=True)
            ],
            dtype=np.float64,
        )
        age = np.maximum((now - accessed) / DAY, 0.0)
        layer = np.array(data["layer"])
        strength = effective_strength_batch(
            np.array(data["importance"], dtype=np.float64),
            np.array(data["trust"]),
            np.array(data["access_count"], dtype=np.float64),
            np.array(data["decay_rate"], dtype=np.float64),
            age,
            layer == "long_term",
            self.cfg,
        )
        # seed 002 §6: the age that counts is the time since the last access
        decayed = (strength < self.cfg.soft_delete_strength) & (age > self.cfg.soft_delete_age_days)
        promote = (strength >= self.cfg.promote_threshold) & (layer != "long_term") & ~decayed
        demote = (strength <= self.cfg.demote_threshold) & (layer != "short_term") & ~decayed
        for mask, values in (
            (promote, {"layer": "long_term"}),
            (demote, {"layer": "short_term"}),
            (decayed, {"deleted": True}),
        ):
            chosen = ids[mask].tolist()
            if chosen:
                self.table.table.update(where=f"id IN ({_quote_list(chosen)})", values=values)
        report.promoted, report.demoted = int(promote.sum()), int(demote.sum())
        report.decayed = int(decayed.sum())

    def _conflicts(self, report: MaintenanceReport) -> None:
        related = {
            r["src"]
            for r in self.table.relations.search()
            .select(["src"])
            .limit(max(self.table.relations.count_rows(), 1))
            .to_list()
        }
        rows = (
            self.table.table.search()
            .where("deleted = false")
            .limit(self.conflict_scan_limit)
            .to_list()
        )
        for row in rows:
            if row["id"] in related:
                continue
            for other, similarity in self.table.neighbours(
                np.asarray(row["vector"]), row["scope"], self.cfg.candidate_limit
            ):
                if other["id"] == row["id"] or other["created_at"] > row["created_at"]:
                    continue
                confidence = contradiction_confidence(
                    row["content"], other["content"], similarity, self.cfg
                )
                if confidence >= self.cfg.conflict_threshold:
                    report.conflicts_found += 1
                    self.table.relate(
                        row["id"],
                        other["id"],
                        "contradicts",
                        confidence,
                        "maintenance: heuristic conflict upkeep",
                    )
                    report.conflicts_resolved += 1

    def _consolidate(self, now: float, report: MaintenanceReport) -> None:
        rows = (
            self.table.table.search()
            .where("deleted = false")
            .limit(max(self.table.count(), 1))
            .to_list()
        )
        by_entity: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in rows:
            if "consolidated" in (row["tags"] or []):
                continue
            for entity in row["entity_refs"] or []:
                by_entity[entity].append(row)
        seen: set[str] = set()
        merged = []
        for candidates in by_entity.values():
            for left, right in combinations(candidates, 2):
                if left["id"] in seen or right["id"] in seen or left["scope"] != right["scope"]:
                    continue
                if abs(left["created_at"] - right["created_at"]) / DAY > self.window_days:
                    continue
                if cosine_similarity(left["vector"], right["vector"]) < (
                    self.cfg.consolidation_similarity
                ):
                    continue
                seen.update({left["id"], right["id"]})
                merged.append(self._merge([left, right], now))
        if merged:
            self.table.upsert([row for row, _ in merged])
            superseded = []
            for row, members in merged:
                for member in members:
                    self.table.relate(row["id"], member["id"], "supersedes", 1.0, "consolidation")
                    superseded.append(member["id"])
            self.table.table.update(
                where=f"id IN ({_quote_list(superseded)})",
                values={"deleted": True, "updated_at": now},
            )
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
