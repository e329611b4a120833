"""What the monitor knows of tool outages: the notices of the tool-outages topic.

Every worker with the monitor role follows the tool-outages topic (keyed by tool,
every partition, from the start) into an :class:`OutageBoard`. A failed call that
an outage notice covers (same tool, same error digest, event time within the
outage) is not counted against its agent: the monitor applies it without running
its detectors (the fleet role told the loop about the outage instead).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from loopwarden.agents.fleet.tool_outage import error_digest
from loopwarden.schemas.events import ActionEvent


class Window(NamedTuple):
    """When an outage lasts (event time, both ends included)."""

    since: float
    until: float


class OutageBoard:
    """Tool → error digest → its :class:`Window`, from the outage notices."""

    def __init__(self) -> None:
        self._outages: dict[str, dict[str, Window]] = {}
        self.suppressed = 0
        """Failures not counted against their agent so far."""

    def __bool__(self) -> bool:
        return bool(self._outages)

    def note(self, notice: Mapping[str, Any]) -> None:
        """Apply one notice (a later notice of the same outage extends it)."""
        tool, digest = str(notice["tool"]), str(notice["error_digest"])
        since, until = float(notice["since"]), float(notice["until"])
        known = self._outages.setdefault(tool, {}).get(digest)
        if known is not None and known.since <= since <= known.until:
            since = known.since  # the same outage, extended
        self._outages[tool][digest] = Window(since, max(until, known.until if known else until))

    def declared(self, event: ActionEvent) -> bool:
        """The event is a failure of a tool in outage, with the outage's error."""
        payload = event.payload
        if not payload.failed:
            return False
        outages = self._outages.get(payload.action_type)
        if not outages:
            return False
        window = outages.get(error_digest(payload.error_message))
        return window is not None and window.since <= event.occurred_at <= window.until

    def covers(self, event: ActionEvent) -> bool:
        """:meth:`declared`, counted in :attr:`suppressed` (the monitor's question: the
        failure is not counted against its agent)."""
        if not self.declared(event):
            return False
        self.suppressed += 1
        return True
