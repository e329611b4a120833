"""What a guard knows of its loops, with no broker: the guard contract's pure half.

:class:`GuardState` is everything :class:`~loopwarden.adapters.guard.LoopGuard` decides
without Kafka — which loops it watches and their families, what each published event
carries, which event a model call waits for, the warnings kept per loop, the note and
the stop — so that the guard contract (``docs/guard-contract.md``) is checked, scenario
by scenario, without a broker: ``tests/fixtures/guard_scenarios.json`` is run by
``tests/unit/test_guard_contract.py`` here and by the TypeScript client's own
``GuardState`` (``clients/typescript/test/guard-contract.test.ts``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

from cachetools import TTLCache

from loopwarden.adapters.notes import RunNotes, memory_text
from loopwarden.schemas.ids import new_event_id
from loopwarden.schemas.warnings import LoopWarning
from loopwarden.streams.client.inbox import WarningInbox


class GuardState:
    """A guard's loops, their families, pending verdicts, warnings and notes (thread-safe)."""

    def __init__(
        self, shown_warnings: int, *, max_loops: int = 10_000, loop_ttl_s: float = 3600.0
    ) -> None:
        self._lock = threading.Lock()
        self._watched: TTLCache[str, bool] = TTLCache(max_loops, loop_ttl_s)
        self._families: TTLCache[str, dict[str, str]] = TTLCache(max_loops, loop_ttl_s)
        """Per loop: the family fields its events carry (``task`` only until sent once)."""
        self._due: TTLCache[str, tuple[float, str]] = TTLCache(max_loops, loop_ttl_s)
        """Per loop: when its latest event was handed over, and that event's id."""
        self.inbox = WarningInbox(max_loops=max_loops, ttl_s=loop_ttl_s, accept=self.watching)
        self.notes = RunNotes(shown_warnings, max_loops=max_loops)

    def watch(self, loop_id: str, family: Mapping[str, str] | None = None) -> bool:
        """Watch the loop (its warnings are kept from now on), in ``family``
        (``parent_loop_id``, ``root_loop_id``, ``agent``, ``task``); True when new."""
        with self._lock:
            new = loop_id not in self._watched
            self._watched[loop_id] = True
            if family:
                self._families[loop_id] = dict(family)
        return new

    def watching(self, loop_id: str) -> bool:
        """The loop's warnings are kept."""
        with self._lock:
            return loop_id in self._watched

    def watched(self) -> list[str]:
        """Every loop watched now."""
        with self._lock:
            return list(self._watched)

    def lineage(self, loop_id: str) -> dict[str, str]:
        """The family fields of a watched loop (empty: it is its own family's root)."""
        with self._lock:
            return dict(self._families.get(loop_id) or {})

    def outgoing(self, loop_id: str, payload: dict[str, Any]) -> dict[str, Any]:
        """``payload`` as the loop's next event carries it: the loop is watched, its
        family's fields are added (the task on its first event only), and — unless it is
        the person's turn, which warns nothing — it gets an ``event_id`` the next model
        call waits for the verdict on."""
        with self._lock:
            self._watched[loop_id] = True
            if payload.get("turn") != "counterpart":
                event_id = payload.setdefault("event_id", new_event_id())
                self._due[loop_id] = (time.monotonic(), event_id)
            family = self._families.get(loop_id)
            if family:
                for name, value in family.items():
                    payload.setdefault(name, value)
                family.pop("task", None)  # the first event carries it
        return payload

    def due(self, loop_id: str) -> tuple[float, str] | None:
        """The event a model call of the loop waits for — (handed over at, monotonic; its
        id) — taken once; None when nothing was published since, or a stop is in force
        for the loop or its family's root (nothing left to wait for)."""
        with self._lock:
            due = self._due.pop(loop_id, None)
        if due is None or self.family_stop(loop_id) is not None:
            return None
        return due

    def add(self, warning: LoopWarning) -> bool:
        """A warning arrived: kept for its loop when watched (False: not ours)."""
        return self.inbox.add(warning)

    def learned(self, loop_id: str, memories: list[str]) -> None:
        """At a run's start: the memories that fit its task open every note of the run."""
        self.notes.learned(loop_id, memory_text(memories))

    def note(self, loop_id: str) -> str | None:
        """The note for the loop's next model call: the memories its run started with and
        its latest ``shown_warnings`` warnings (new ones included); None while both are
        empty."""
        return self.notes.note(loop_id, self.inbox.take(loop_id))

    def take(self, loop_id: str) -> list[LoopWarning]:
        """The loop's warnings not handed out yet, oldest first."""
        return self.inbox.take(loop_id)

    def stop_for(self, loop_id: str) -> LoopWarning | None:
        """The stop recommendation in force for the loop, if any."""
        return self.inbox.stop_for(loop_id)

    def family_stop(self, loop_id: str) -> LoopWarning | None:
        """The stop in force for the loop, else for its family's root: a sub-agent stops
        with its family."""
        stop = self.stop_for(loop_id)
        if stop is None:
            root = self.lineage(loop_id).get("root_loop_id")
            if root is not None:
                stop = self.stop_for(root)
        return stop

    def forget(self, loop_id: str) -> None:
        """The run is over: nothing of the loop is kept."""
        with self._lock:
            self._watched.pop(loop_id, None)
            self._families.pop(loop_id, None)
            self._due.pop(loop_id, None)
        self.inbox.forget(loop_id)
        self.notes.forget(loop_id)
