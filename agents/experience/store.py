"""The experience store: match a task, learn from a run, record a replay's outcome, upkeep.

Reuses the memory store's embedder (one model in the worker) and LanceDB
directory. Exact (Level 1) look-ups go through an in-process LRU of hot
experiences (seed 004 §5.1 L1, ``experience.cache_size`` entries, refreshed
after ``CACHE_TTL_S`` so another worker's updates show); there is no Redis.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import cachetools

from loopwarden.agents.experience.advice import build_advice
from loopwarden.agents.experience.generalise import generalise
from loopwarden.agents.experience.learning import build_experience
from loopwarden.agents.experience.matching import (
    Match,
    choose,
    description_hash,
    ema,
    replayable,
)
from loopwarden.agents.experience.tasks import OpenTask
from loopwarden.agents.memory.embedding import Embedder, make_embedder
from loopwarden.schemas.outputs import AdviceRecord
from loopwarden.schemas.tasks import TaskSpec
from loopwarden.settings import ExperienceSettings, MemorySettings
from loopwarden.storage.boundary import StorageBoundary, boundary_for
from loopwarden.storage.experience_table import ExperienceTable
from loopwarden.storage.memory_schema import quote

CACHE_TTL_S = 30.0
FEEDBACK_KEPT = 20
"""Task-end event ids an experience remembers (a redelivered end is applied once)."""
DAY_S = 86_400.0
FAILURES_PEEKED = 3
"""Nearest neighbours looked at beyond ``semantic_top_k`` (negative experiences)."""


@dataclass
class MatchResult:
    """A task's advice and how it was found."""

    advice: AdviceRecord
    match: Match
    seconds: float
    cached: bool = False


@dataclass
class MaintenanceReport:
    """What one maintenance cycle did."""

    patterns: int = 0
    decayed: int = 0
    indexes_built: list[str] = field(default_factory=list)
    seconds: float = 0.0


class ExperienceStore:
    """Task experiences in LanceDB, matched and learned (pure of Kafka)."""

    def __init__(
        self,
        settings: ExperienceSettings,
        memory: MemorySettings,
        embedder: Embedder | None = None,
        *,
        shared_embedder: Callable[[], Embedder] | None = None,
    ) -> None:
        self.settings = settings
        self.memory = memory
        self._embedder = embedder
        self._shared_embedder = shared_embedder  # e.g. the memory service's, loaded once
        self.lock = threading.Lock()  # LanceDB work runs in threads, one at a time
        size = max(settings.cache_size, 1)
        self._hot: cachetools.TTLCache[str, tuple[int, list[dict[str, Any]]]] = cachetools.TTLCache(
            size, CACHE_TTL_S
        )
        self._patterns: tuple[float, int, list[dict[str, Any]]] | None = None
        self._read_only = False

    @cached_property
    def embedder(self) -> Embedder:
        """The memory store's embedder."""
        if self._embedder is not None:
            return self._embedder
        if self._shared_embedder is not None:
            return self._shared_embedder()
        return make_embedder(self.memory)

    @classmethod
    def read_only(
        cls, settings: ExperienceSettings, memory: MemorySettings, embedder: Embedder | None = None
    ) -> ExperienceStore:
        """A store that only matches, at the versions a recorded advice names (``match(at=)``);
        its tables must exist (:meth:`ExperienceTable.read_only`)."""
        store = cls(settings, memory, embedder)
        store._read_only = True
        return store

    @cached_property
    def table(self) -> ExperienceTable:
        """The LanceDB tables."""
        if self._read_only:
            return ExperienceTable.read_only(
                self.memory.uri, self.embedder.dims, self.settings.table
            )
        return ExperienceTable(
            self.memory.uri,
            self.embedder.dims,
            self.settings.table,
            read_consistency_s=self.memory.read_consistency_s,
        )

    @property
    def boundary(self) -> StorageBoundary:
        """Where a LanceDB failure of this store is understood (away, or the call's fault)."""
        return boundary_for(self.memory.uri)

    # -- serving ----------------------------------------------------------------------------

    def match(
        self,
        task: TaskSpec,
        task_event_id: str,
        loop_id: str,
        now: float,
        at: Mapping[str, int | None] | None = None,
    ) -> MatchResult:
        """Route ``task`` through the seed's levels and build its advice; the advice names
        the table versions each read saw (``read_versions``). ``at``: such versions, on a
        :meth:`read_only` store — match as the store was then (an audit's replay)."""
        started = time.perf_counter()
        key = description_hash(task.task_description)
        cached = at is None and bool(self.settings.cache_size) and key in self._hot
        exact_version, exact = self._exact(key, at)
        semantic: list[tuple[dict[str, Any], float]] = []
        failures: list[tuple[dict[str, Any], float]] = []
        semantic_version: int | None = None
        best_exact = max(
            (e["success_rate"] for e in exact if replayable(e, self.settings)), default=0
        )
        if best_exact <= self.settings.direct_min_success_rate:
            # one unfiltered query, split by outcome: a prefiltered one cost 3× (42 vs
            # 14 ms at 10,000 rows); failures further than the first few are not advice
            if at is not None:
                self.table.pin(experiences=at.get("semantic") or at.get("exact"))
            vector = self.embedder.embed([task.task_description])[0]
            k = self.settings.semantic_top_k + FAILURES_PEEKED
            semantic_version, nearest = self.table.consistent(lambda: self.table.nearest(vector, k))
            for experience, cosine in nearest:
                if experience["outcome"] == "success":
                    semantic.append((experience, cosine))
                else:
                    failures.append((experience, cosine))
        patterns_version, patterns = self._app_patterns(task, at)
        match = choose(task, exact, semantic, patterns, self.settings)
        advice = build_advice(
            task_event_id, loop_id, match, self._avoid(task, exact, failures), now
        )
        advice["read_versions"] = {
            "exact": exact_version,
            "semantic": semantic_version,
            "patterns": patterns_version,
        }
        return MatchResult(advice, match, time.perf_counter() - started, cached)

    def _exact(
        self, key: str, at: Mapping[str, int | None] | None
    ) -> tuple[int, list[dict[str, Any]]]:
        """The experiences of description hash ``key``, and the version they were read at
        (from the LRU while fresh: another worker's update shows within ``CACHE_TTL_S``)."""
        if at is not None:
            self.table.pin(experiences=at.get("exact"))
        elif self.settings.cache_size and (hit := self._hot.get(key)) is not None:
            return hit  # .get: an entry may expire between a membership test and a read
        table = self.table
        read = table.consistent(lambda: table.where(f"description_hash = {quote(key)}", 20))
        if at is None and self.settings.cache_size:
            self._hot[key] = read
        return read

    def _avoid(
        self,
        task: TaskSpec,
        exact: list[dict[str, Any]],
        failures: list[tuple[dict[str, Any], float]],
    ) -> list[str]:
        lines: list[str] = []
        for experience in exact:
            lines.extend(experience.get("avoid") or [])
        for experience, cosine in failures:
            if cosine >= self.settings.semantic_threshold:
                same_app = not task.app_name or experience.get("app_name") == task.app_name
                if same_app:
                    lines.extend(experience.get("avoid") or [])
        return list(dict.fromkeys(lines))[:8]

    def _app_patterns(
        self, task: TaskSpec, at: Mapping[str, int | None] | None
    ) -> tuple[int, list[dict[str, Any]]]:
        """The patterns of ``task``'s app, and the version they were read at (kept for
        ``CACHE_TTL_S``)."""
        loaded = self._patterns
        if at is not None:
            self.table.pin(patterns=at.get("patterns"))
            loaded = (0.0, *self.table.consistent(self.table.patterns, patterns=True))
        elif loaded is None or time.monotonic() - loaded[0] > CACHE_TTL_S:
            version, patterns = self.table.consistent(self.table.patterns, patterns=True)
            loaded = self._patterns = (time.monotonic(), version, patterns)
        app = (task.app_name or "").casefold()
        matching = [p for p in loaded[2] if not app or (p.get("app_name") or "").casefold() == app]
        return loaded[1], matching

    # -- learning ---------------------------------------------------------------------------

    def learn(self, ended: list[tuple[OpenTask, dict[str, Any]]], now: float) -> int:
        """Store the experiences ``ended`` runs teach ((task, end payload) pairs); return
        how many were new (a run learned before is not stored again). A failed run is
        kept when it has something to avoid (failed calls, repeats, a reason)."""
        rows = [
            build_experience(
                task,
                end["success"],
                now,
                self.settings,
                feedback_score=end.get("feedback_score"),
                reason=end.get("reason"),
            )
            for task, end in ended
        ]
        rows = [row for row in rows if row["outcome"] == "success" or row["avoid"]]
        if not rows:  # a failure with nothing to avoid teaches nothing
            return 0
        vectors = self.embedder.embed([row["task_description"] for row in rows])
        added = self.table.insert_new(rows, vectors)
        for row in rows:
            self._hot.pop(row["description_hash"], None)
        return added

    def record_replay(
        self, experience_id: str, end_event_id: str, success: bool, now: float
    ) -> dict[str, Any] | None:
        """A replay of ``experience_id`` ended: EMA of its success rate, use count and time
        (once per end event). Returns the updated values, or None (unknown or applied)."""
        experience = self.table.get(experience_id)
        if experience is None or end_event_id in (experience.get("applied_feedback") or []):
            return None
        rate = ema(experience["success_rate"], success, self.settings.success_ema_alpha)
        values = {
            "success_rate": rate,
            "use_count": experience["use_count"] + 1,
            "replay_successes": experience["replay_successes"] + int(success),
            "replay_failures": experience["replay_failures"] + int(not success),
            "last_used_at": now,
            "applied_feedback": [*experience["applied_feedback"], end_event_id][-FEEDBACK_KEPT:],
        }
        self.table.update(experience_id, values)
        self._hot.pop(experience["description_hash"], None)
        return values

    # -- maintenance ------------------------------------------------------------------------

    def maintain(self, now: float) -> MaintenanceReport:
        """Generalise successful cases into patterns, remove decayed experiences (unused for
        ``decay_after_days`` with a success rate below ``decay_below``), keep indexes."""
        started = time.perf_counter()
        report = MaintenanceReport()
        cutoff = now - self.settings.decay_after_days * DAY_S
        decayed = f"last_used_at < {cutoff!r} AND success_rate < {self.settings.decay_below!r}"
        report.decayed = self.table.count(decayed)
        if report.decayed:
            self.table.delete(decayed)
            self._hot.clear()
        cases = [
            row
            for row in self.table.all()
            if row["outcome"] == "success" and replayable(row, self.settings)
        ]
        patterns = generalise(cases, self.settings)
        self.table.replace_patterns(patterns, now)
        self._patterns = None
        report.patterns = len(patterns)
        report.indexes_built = self.table.ensure_indexes(self.settings.vector_index_min_rows)
        report.seconds = time.perf_counter() - started
        return report

    def stats(self) -> dict[str, Any]:
        """Totals for the CLI and the metrics (seed 004 §6)."""
        rows = self.table.all(
            [
                "outcome",
                "success_rate",
                "use_count",
                "replay_successes",
                "replay_failures",
                "size_bytes",
            ]
        )
        positive = [r for r in rows if r["outcome"] == "success"]
        successes = sum(r["replay_successes"] for r in rows)
        replays = successes + sum(r["replay_failures"] for r in rows)
        return {
            "total_experiences": len(rows),
            "successful": len(positive),
            "failed": len(rows) - len(positive),
            "flagged_for_reexploration": sum(not replayable(r, self.settings) for r in positive),
            "patterns": len(self.table.patterns()),
            "experience_reuse_count": sum(r["use_count"] for r in rows),
            "replay_success_rate": round(successes / replays, 4) if replays else None,
            "avg_experience_size_kb": round(
                sum(r["size_bytes"] for r in rows) / len(rows) / 1024, 3
            )
            if rows
            else 0.0,
        }
