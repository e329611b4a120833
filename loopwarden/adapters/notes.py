"""The note an adapter puts in front of a model call: the run's latest warnings.

The note goes into the request only — the system prompt or the instructions of that
one call, never a user turn kept in the conversation — and every later call of the
run carries it again with whatever arrived since, the latest ``keep`` warnings, so
the model keeps reading what it was told without the transcript growing a turn per
warning.
"""

from __future__ import annotations

import threading
import time

from cachetools import TTLCache

from loopwarden.schemas.tool_calls import context_text
from loopwarden.schemas.warnings import LoopWarning


class RunNotes:
    """Per loop, the warnings shown so far (the latest ``keep``), thread-safe and
    bounded like the guard's inbox."""

    def __init__(self, keep: int, *, max_loops: int = 10_000, ttl_s: float = 3600.0) -> None:
        self.keep = keep
        self._shown: TTLCache[str, list[LoopWarning]] = TTLCache(
            max_loops, ttl_s, timer=time.monotonic
        )
        self._lock = threading.Lock()

    def note(self, loop_id: str, arrived: list[LoopWarning]) -> str | None:
        """The note for the loop's next model call, with ``arrived`` (warnings not shown
        yet) added; None while the loop has been shown nothing."""
        with self._lock:
            shown = [*self._shown.get(loop_id, []), *arrived][-self.keep :]
            if not shown:
                return None
            self._shown[loop_id] = shown
            return context_text(shown)

    def forget(self, loop_id: str) -> None:
        with self._lock:
            self._shown.pop(loop_id, None)
