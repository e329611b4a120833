"""Experience in an audit or a replay: the advice each task start got, matched again against
the experience store as it was then.

A worker's advice depends on what the store had learnt when the start was matched, so
replaying it against today's store would differ for every task that was learnt from
since. Each advice names the LanceDB versions its reads saw (``read_versions``);
:class:`AdviceReplay` opens the store read-only and matches each start at those
versions, with no side effect (nothing learnt, no replay counted, no cache). What a
task's end taught is in the later versions the next advice names, so ends are not
applied. A start whose advice was not recorded is matched against the store as it is
now: the audit reports that advice as missing from the recording.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from loopwarden.agents.experience.records import TaskOutcome
from loopwarden.errors import ConfigurationError
from loopwarden.schemas.ids import derived_id
from loopwarden.schemas.outputs import AdviceRecord
from loopwarden.schemas.tasks import TaskSpec, TaskStart
from loopwarden.schemas.trace_context import carried
from loopwarden.settings import Settings

if TYPE_CHECKING:
    from loopwarden.agents.experience.store import ExperienceStore


class AdviceReplay:
    """The replay's settle step for experience (a
    :class:`~loopwarden.streams.runtime.capability.ReplaySettle`)."""

    def __init__(self, settings: Settings, recorded: Mapping[str, dict[str, Any]]) -> None:
        self.settings = settings
        self.recorded = recorded
        """Task event id → the advice the workers recorded for it."""
        self.skipped: dict[str, str] = {}
        self._store: ExperienceStore | None = None
        self._unavailable: str | None = None

    def _open(self) -> ExperienceStore | None:
        """The read-only store, opened at the first start (None: there is none)."""
        if self._store is None and self._unavailable is None:
            # LanceDB loads with the first task start: an audit of actions alone (most)
            # does not pay its 1.3 s import
            from loopwarden.agents.experience.store import ExperienceStore

            try:
                store = ExperienceStore.read_only(self.settings.experience, self.settings.memory)
                store.table  # noqa: B018 - opened now, so a missing table is said once
                self._store = store
            except ConfigurationError as exc:
                self._unavailable = f"the experience store cannot be read: {exc}"
        return self._store

    def __call__(self, outcomes: Sequence[TaskOutcome]) -> Iterator[tuple[str, Any]]:
        for outcome in outcomes:
            for task, event in outcome.lifecycle:
                if isinstance(event, TaskStart):
                    advice = self._advise(TaskSpec(**task.spec), event, task.loop_id)
                    if advice is not None:
                        yield "advice", carried(advice, event.trace_context)

    def _advise(self, spec: TaskSpec, start: TaskStart, loop_id: str) -> AdviceRecord | None:
        recorded = self.recorded.get(start.event_id)
        advice_id = derived_id("advice", start.event_id)
        at = recorded.get("read_versions") if recorded is not None else None
        if recorded is not None and not at:
            self.skipped[advice_id] = "recorded without the store versions it was matched at"
            return None
        store = self._open()
        if store is None:
            self.skipped[advice_id] = str(self._unavailable)
            return None
        produced_at = recorded["produced_at"] if recorded is not None else start.occurred_at
        try:
            return store.match(spec, start.event_id, loop_id, produced_at, at=at).advice
        except LookupError as exc:
            self.skipped[advice_id] = f"the store no longer holds what it was matched at: {exc}"
            return None
