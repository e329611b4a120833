"""The one backoff of the worker: waits that double up to a cap, a bounded number of
times or until it works (the runner's retries, the sink's delivery, reconnections)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Backoff:
    """``initial_s`` doubling up to ``max_s``; ``max_retries`` retries of one call before
    it is given up (None: until it works)."""

    initial_s: float = 0.5
    max_s: float = 30.0
    max_retries: int | None = 5

    def delay(self, attempt: int) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based)."""
        return min(self.max_s, self.initial_s * 2 ** (attempt - 1))

    def gives_up(self, attempt: int) -> bool:
        """True when retry number ``attempt`` is one too many."""
        return self.max_retries is not None and attempt > self.max_retries

    async def until_done(
        self,
        call: Callable[[], Awaitable[T]],
        retry_on: type[BaseException] | tuple[type[BaseException], ...],
        on_retry: Callable[[BaseException, int, float], None],
    ) -> T:
        """``await call()`` until it returns, waiting after each ``retry_on`` exception
        (``on_retry(exc, attempt, delay)`` says so first); ``max_retries`` is ignored."""
        attempt = 0
        while True:
            try:
                return await call()
            except retry_on as exc:
                attempt += 1
                delay = self.delay(attempt)
                on_retry(exc, attempt, delay)
                await asyncio.sleep(delay)
