"""Warnings waiting for their agent's next model call, per loop.

Both ends of an adapter keep one: the client-side :class:`~loopwarden.adapters.guard.LoopGuard`
(for the loops its process runs) and the worker's Claude Code hook endpoint (for every
loop, bounded). A warning is *pending* until :meth:`WarningInbox.take` hands it out
once; a ``stop`` recommendation stays in force for the loop until the loop is
forgotten, so every later tool call can be refused.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from cachetools import TTLCache

from loopwarden.schemas.warnings import LoopWarning


def is_stop(warning: LoopWarning) -> bool:
    """The warning recommends ending the run (the ladder's last step, or a guardrail halt)."""
    return warning.step == "stop" or "stop" in warning.next_actions


TRIGGERS_KEPT = 64
"""Per loop, the trigger event ids of its latest warnings kept for :meth:`answered`."""


class _LoopBox:
    __slots__ = ("pending", "seen", "stop", "triggers")

    def __init__(self) -> None:
        self.pending: list[LoopWarning] = []
        self.stop: LoopWarning | None = None
        self.seen = 0
        self.triggers: dict[str, None] = {}


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

    def add(self, warning: LoopWarning) -> bool:
        """Keep ``warning`` for its loop; False when the loop is not accepted."""
        if self._accept is not None and not self._accept(warning.loop_id):
            return False
        with self._changed:
            box = self._box(warning.loop_id)
            box.pending.append(warning)
            box.seen += 1
            box.triggers[warning.trigger_event_id] = None
            if len(box.triggers) > TRIGGERS_KEPT:
                del box.triggers[next(iter(box.triggers))]
            if is_stop(warning) and box.stop is None:
                box.stop = warning
            self._changed.notify_all()
        return True

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
        """Block until a warning about event ``event_id`` arrived for the loop, or a stop
        recommendation is in force for it; False on timeout (most events warn nothing)."""

        def answered() -> bool:
            box = self._boxes.get(loop_id)
            return box is not None and (box.stop is not None or event_id in box.triggers)

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
