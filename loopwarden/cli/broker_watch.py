"""A follower's broker watch: says when the broker stops answering, and gives up later.

A Kafka consumer whose broker goes away retries without a word: ``loopwarden tail``
would sit silent forever, though at start-up the same broker gone is exit 3 with a
clear line. :class:`BrokerWatch` asks the broker for metadata every few seconds; the
first time it gets no answer it says so on stderr (what it lost, that it is
retrying, when it will give up), it says when the broker answers again, and after
``give_up_s`` of silence (0: never) it raises
:class:`~loopwarden.errors.BrokerUnavailableError` — exit 3, as at start-up.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from loopwarden.errors import BrokerUnavailableError

PROBE_TIMEOUT_S = 5.0
"""A probe that gets no answer in this long counts as no answer (a paused broker)."""


class BrokerWatch:
    """Tracks whether the broker answers; reports the transitions through ``say``."""

    def __init__(
        self,
        probe: Callable[[], Awaitable[object]],
        where: str,
        give_up_s: float,
        say: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
        probe_timeout_s: float = PROBE_TIMEOUT_S,
    ) -> None:
        self.probe = probe
        self.where = where
        self.give_up_s = give_up_s
        self.say = say
        self.clock = clock
        self.probe_timeout_s = probe_timeout_s
        self.down_since: float | None = None

    @property
    def interval_s(self) -> float:
        """How often to probe: every 5 s, more often under a short bound."""
        return 5.0 if not self.give_up_s else max(0.5, min(5.0, self.give_up_s / 4))

    async def check(self) -> None:
        """Probe once; say what changed; raise when the broker has been silent too long."""
        try:
            await asyncio.wait_for(self.probe(), min(self.probe_timeout_s, self.interval_s * 2))
        except Exception as exc:  # a timeout, a refused or reset connection
            self._lost(exc)
            return
        if self.down_since is not None:
            silent = self.clock() - self.down_since
            self.say(f"the broker at {self.where} answers again after {silent:.0f} s; following on")
            self.down_since = None

    def _lost(self, exc: BaseException) -> None:
        now = self.clock()
        if self.down_since is None:
            self.down_since = now
            why = "no answer" if isinstance(exc, TimeoutError) else str(exc) or type(exc).__name__
            bound = f"giving up after {self.give_up_s:g} s" if self.give_up_s else "never giving up"
            self.say(
                f"lost the broker at {self.where} ({why}); retrying, {bound} (--give-up-after)"
            )
            return
        silent = now - self.down_since
        if self.give_up_s and silent >= self.give_up_s:
            raise BrokerUnavailableError(
                f"the broker at {self.where} has not answered for {silent:.0f} s: giving up "
                f"(--give-up-after {self.give_up_s:g})"
            )

    async def run(self) -> None:
        """Probe every :attr:`interval_s` until cancelled or given up."""
        while True:
            await asyncio.sleep(self.interval_s)
            await self.check()
