"""The note an adapter puts in front of a model call: what earlier runs learned that
fits the task (with ``adapters.memory_scope``), and the run's latest warnings.

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

from loopwarden.schemas.tool_calls import MEMORY_HEADER, context_text
from loopwarden.schemas.warnings import LoopWarning


def memory_text(contents: list[str]) -> str | None:
    """The memories block of a run's note (None without memories)."""
    if not contents:
        return None
    return "\n".join([MEMORY_HEADER, *(f"- {content}" for content in contents)])


class RunNotes:
    """Per loop, the warnings shown so far (the latest ``keep``), thread-safe and
    bounded like the guard's inbox."""

    def __init__(self, keep: int, *, max_loops: int = 10_000, ttl_s: float = 3600.0) -> None:
        self.keep = keep
        self._shown: TTLCache[str, list[LoopWarning]] = TTLCache(
            max_loops, ttl_s, timer=time.monotonic
        )
        self._memories: TTLCache[str, str] = TTLCache(max_loops, ttl_s, timer=time.monotonic)
        self._lock = threading.Lock()

    def learned(self, loop_id: str, text: str | None) -> None:
        """Keep the memories block the loop's run starts with (its note carries it)."""
        if text:
            with self._lock:
                self._memories[loop_id] = text

    def note(self, loop_id: str, arrived: list[LoopWarning]) -> str | None:
        """The note for the loop's next model call, with ``arrived`` (warnings not shown
        yet) added; None while the loop has been shown nothing."""
        with self._lock:
            shown = [*self._shown.get(loop_id, []), *arrived][-self.keep :]
            if shown:
                self._shown[loop_id] = shown
            parts = [self._memories.get(loop_id), context_text(shown) if shown else None]
        return "\n\n".join(part for part in parts if part) or None

    def forget(self, loop_id: str) -> None:
        with self._lock:
            self._shown.pop(loop_id, None)
            self._memories.pop(loop_id, None)
