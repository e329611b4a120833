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
from typing import TYPE_CHECKING

from loopwarden.schemas.families import RUN_START, TASK_MAX_CHARS

if TYPE_CHECKING:
    from loopwarden.adapters.guard import LoopGuard
    from loopwarden.schemas.warnings import LoopWarning


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
            fields["task"] = task[:TASK_MAX_CHARS]
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


def start_delegated(
    guard: LoopGuard, loop_id: str, caller: Lineage, agent: str | None, task: str | None
) -> None:
    """Watch a run ``caller``'s tool call started as a loop of its family, and publish
    its start now (with its task): the caller's tool call, and its event, only return
    when this run is over."""
    guard.watch(loop_id, **caller.child_fields(agent, task))
    guard.publish(loop_id, RUN_START, turn="message")


def lineage_of(guard: LoopGuard, loop_id: str) -> Lineage:
    """A watched loop's place in its family (its own root when nobody delegated to it)."""
    family = guard.lineage(loop_id)
    return Lineage(loop_id, family.get("root_loop_id", loop_id), family.get("agent"))


def family_stop(guard: LoopGuard, loop_id: str) -> LoopWarning | None:
    """The stop for ``loop_id``, or for its family's root: a sub-agent stops with its
    family."""
    return guard.state.family_stop(loop_id)
