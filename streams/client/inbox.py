"""Warnings waiting for their agent's next model call, per loop.

Both ends of an adapter keep one: the client-side :class:`~loopwarden.adapters.guard.LoopGuard`
(for the loops its process runs) and the worker's Claude Code hook endpoint (for every
loop, bounded). A warning is *pending* until :meth:`WarningInbox.take` hands it out
once; a ``stop`` recommendation stays in force for the loop until the loop is
forgotten, so every later tool call can be refused.

The worker's answering roles also answer every action event with a
:class:`~loopwarden.schemas.verdicts.Verdict` (:meth:`WarningInbox.answer`): a wait for
an event's verdict (:meth:`WarningInbox.wait_answer`) ends as soon as every answering
role heard of in the last :data:`ROLES_KEPT_S` has answered it and the warnings they
announced have arrived — so a healthy step does not wait out the bound.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from cachetools import TTLCache

from loopwarden.schemas.verdicts import Verdict
from loopwarden.schemas.warnings import LoopWarning


def is_stop(warning: LoopWarning) -> bool:
    """The warning recommends ending the run (the ladder's last step, or a guardrail halt)."""
    return warning.step == "stop" or "stop" in warning.next_actions


TRIGGERS_KEPT = 64
"""Per loop, the trigger event ids of its latest warnings (and the latest events'
verdicts) kept for :meth:`WarningInbox.wait_answer`."""

ROLES_KEPT_S = 600.0
"""An answering role not heard of for this long is no longer waited for (its worker was
stopped or no longer runs it)."""


def _bounded(kept: dict[str, Any]) -> None:
    if len(kept) > TRIGGERS_KEPT:
        del kept[next(iter(kept))]


class _LoopBox:
    __slots__ = ("answers", "pending", "seen", "stop", "triggers")

    def __init__(self) -> None:
        self.pending: list[LoopWarning] = []
        self.stop: LoopWarning | None = None
        self.seen = 0
        self.triggers: dict[str, int] = {}
        """Event id → warnings arrived about it."""
        self.answers: dict[str, dict[str, int]] = {}
        """Event id → role → warnings that role announced about it."""


class WarningInbox:
    """Thread-safe pending warnings per loop, at most ``max_loops`` loops kept ``ttl_s``.

    ``accept`` decides which loops' warnings are kept (default: every loop's).
    """

    def __init__(
        self,
        *,
        max_loops: int = 10_000,
        ttl_s: float = 3600.0,
        accept: Callable[[str], bool] | None = None,
    ) -> None:
        self._boxes: TTLCache[str, _LoopBox] = TTLCache(max_loops, ttl_s, timer=time.monotonic)
        self._accept = accept
        self._changed = threading.Condition()
        self._roles: dict[str, float] = {}
        """Answering role → when a verdict last named it (monotonic)."""

    def add(self, warning: LoopWarning) -> bool:
        """Keep ``warning`` for its loop; False when the loop is not accepted."""
        if self._accept is not None and not self._accept(warning.loop_id):
            return False
        with self._changed:
            box = self._box(warning.loop_id)
            box.pending.append(warning)
            box.seen += 1
            trigger = warning.trigger_event_id
            box.triggers[trigger] = box.triggers.get(trigger, 0) + 1
            _bounded(box.triggers)
            if is_stop(warning) and box.stop is None:
                box.stop = warning
            self._changed.notify_all()
        return True

    def answer(self, verdict: Verdict) -> bool:
        """Keep a role's verdict on events of its loop; False when the loop is not
        accepted."""
        if self._accept is not None and not self._accept(verdict.loop_id):
            return False
        with self._changed:
            now = time.monotonic()
            for role in (verdict.role, *verdict.roles):
                self._roles[role] = now
            box = self._box(verdict.loop_id)
            for event_id, warnings in verdict.answers.items():
                answers = box.answers.get(event_id)
                if answers is None:
                    answers = box.answers[event_id] = {}
                    _bounded(box.answers)
                answers[verdict.role] = warnings
            self._changed.notify_all()
        return True

    def answers(self, loop_id: str, event_id: str) -> dict[str, int]:
        """The verdicts on event ``event_id`` of the loop so far: role → warnings it
        announced (empty: none arrived, or the event is no longer kept)."""
        with self._changed:
            box = self._boxes.get(loop_id)
            return dict(box.answers.get(event_id) or {}) if box is not None else {}

    def answering_roles(self) -> frozenset[str]:
        """The answering roles heard of in the last :data:`ROLES_KEPT_S`."""
        with self._changed:
            return frozenset(self._live_roles())

    def _live_roles(self) -> list[str]:
        since = time.monotonic() - ROLES_KEPT_S
        return [role for role, heard in self._roles.items() if heard >= since]

    def take(self, loop_id: str) -> list[LoopWarning]:
        """The loop's pending warnings, oldest first; each is handed out once."""
        with self._changed:
            box = self._boxes.get(loop_id)
            if box is None or not box.pending:
                return []
            pending, box.pending = box.pending, []
            return pending

    def stop_for(self, loop_id: str) -> LoopWarning | None:
        """The stop recommendation in force for the loop, if any."""
        with self._changed:
            box = self._boxes.get(loop_id)
            return None if box is None else box.stop

    def pending(self, loop_id: str) -> int:
        """How many warnings wait for the loop's next injection point."""
        with self._changed:
            box = self._boxes.get(loop_id)
            return 0 if box is None else len(box.pending)

    def seen(self, loop_id: str) -> int:
        """How many warnings arrived for the loop so far (taken or not)."""
        with self._changed:
            box = self._boxes.get(loop_id)
            return 0 if box is None else box.seen

    def wait(self, loop_id: str, *, count: int = 1, stop: bool = False, timeout_s: float) -> bool:
        """Block until ``count`` warnings arrived for the loop (or, with ``stop``, a stop
        recommendation); False on timeout. For orchestrators that want a verdict before
        the next step, and for tests."""

        def ready() -> bool:
            box = self._boxes.get(loop_id)
            if box is None:
                return False
            return box.stop is not None if stop else box.seen >= count

        with self._changed:
            return self._changed.wait_for(ready, timeout_s)

    def wait_answer(self, loop_id: str, event_id: str, *, timeout_s: float) -> bool:
        """Block until event ``event_id`` of the loop is answered, or a stop
        recommendation is in force for it; False on timeout. Answered: every answering
        role heard of gave its verdict and the warnings they announced arrived; while no
        verdict was ever heard (a worker that sends none), a warning about the event."""

        def answered() -> bool:
            box = self._boxes.get(loop_id)
            if box is None:
                return False
            if box.stop is not None:
                return True
            roles = self._live_roles()
            if not roles:
                return event_id in box.triggers
            answers = box.answers.get(event_id)
            if answers is None or any(role not in answers for role in roles):
                return False
            return box.triggers.get(event_id, 0) >= sum(answers.values())

        with self._changed:
            return self._changed.wait_for(answered, timeout_s)

    def forget(self, loop_id: str) -> None:
        """Drop what is kept for the loop (its run is over)."""
        with self._changed:
            self._boxes.pop(loop_id, None)

    def _box(self, loop_id: str) -> _LoopBox:
        box = self._boxes.get(loop_id)
        if box is None:
            box = self._boxes[loop_id] = _LoopBox()
        return box
