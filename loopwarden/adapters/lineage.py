"""Which loop delegated to which: the family fields an adapter puts on its events.

A framework runs a sub-agent inside the parent agent's tool call (LangGraph's
agent-as-a-tool, an OpenAI Agents SDK ``agent.as_tool()``). While an adapter runs a
tool it marks its loop as the one delegating (:func:`delegating`, a context
variable: it follows the call into threads and tasks the framework copies the
context to); a run that starts meanwhile is that loop's child
(:func:`parent`), and publishes ``parent_loop_id``, ``root_loop_id`` and its
``agent`` on every event and its ``task`` on the first, so the fleet role sees the
family (see ``docs/fleet.md``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Lineage:
    """A loop's place in its family."""

    loop_id: str
    root_loop_id: str
    agent: str | None = None

    def child_fields(self, agent: str | None, task: str | None) -> dict[str, str]:
        """The family fields of a loop this one delegates to."""
        fields = {"parent_loop_id": self.loop_id, "root_loop_id": self.root_loop_id}
        if agent:
            fields["agent"] = agent
        if task:
            fields["task"] = task[:2000]
        return fields


_delegating: ContextVar[Lineage | None] = ContextVar("loopwarden_delegating", default=None)


def parent() -> Lineage | None:
    """The loop whose tool call is running here (a run starting now is its child)."""
    return _delegating.get()


@contextlib.contextmanager
def delegating(lineage: Lineage) -> Iterator[None]:
    """Mark ``lineage``'s loop as the one delegating while its tool call runs."""
    token = _delegating.set(lineage)
    try:
        yield
    finally:
        _delegating.reset(token)
