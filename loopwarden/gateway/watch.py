"""A request's steps published and its verdict awaited: the gateway's use of a
:class:`~loopwarden.adapters.guard.LoopGuard` (no HTTP here).

For each request: its loop (:mod:`.loops`), its new steps published in order with
ids derived from the loop and the step's place (a retried request publishes nothing
twice; a gateway restarted publishes them again and the worker skips them as
duplicates), the wait for the worker's verdict on them (bounded,
``adapters.verdict_wait_ms``), then what to do: answer in the model's place (a stop is
in force), or forward with the loop's note, or forward as it is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from loopwarden.adapters.guard import LoopGuard
from loopwarden.gateway.loops import LOOP_HEADER, LoopBook, family_of
from loopwarden.gateway.steps import Dialect, JsonBody, Step, Usage
from loopwarden.schemas.ids import derived_id
from loopwarden.schemas.tool_calls import (
    HEARD_ACTION,
    SAID_ACTION,
    stop_text,
    tool_call_fields,
)


@dataclass(frozen=True, slots=True)
class Decision:
    """What the gateway does with one request."""

    loop_id: str
    conversation: str
    """The conversation's key (its loop header or fingerprint): the answer's usage goes
    to it (:meth:`Watcher.answered`)."""
    published: int
    """Steps published for it."""
    stop: str | None = None
    """The stop text to answer with in the model's place (no upstream call)."""
    note: str | None = None
    """The note to put in front of the model (None: forward as it is)."""
    waited_s: float = 0.0


class Watcher:
    """Publishes each request's new steps through ``guard`` and decides (module docstring)."""

    def __init__(self, guard: LoopGuard, book: LoopBook) -> None:
        self.guard = guard
        self.book = book

    async def decide(
        self, dialect: Dialect, body: JsonBody, headers: Mapping[str, str]
    ) -> Decision:
        """Publish what is new in ``body``, wait for the verdict, decide."""
        named = headers.get(LOOP_HEADER) or None
        steps = dialect.steps(body)
        turn = self.book.turn(named, dialect.name, dialect.start(body), len(steps))
        loop_id, guard = turn.loop_id, self.guard
        family = family_of(headers)
        if family:
            guard.watch(loop_id, **family)
        new = steps[turn.first_new :]
        for index, step in enumerate(new, start=turn.first_new):
            usage = turn.usage if index == turn.first_new else None
            self._publish(loop_id, index, step, usage)
        waited = await asyncio.to_thread(guard.await_verdict, loop_id) if new else 0.0
        root = family.get("root_loop_id")
        stop = guard.stop_for(loop_id) or (guard.stop_for(root) if root else None)
        if stop is not None:
            stopped = stop_text(stop)
            return Decision(loop_id, turn.key, len(new), stop=stopped, waited_s=waited)
        note = guard.note(loop_id)
        return Decision(loop_id, turn.key, len(new), note=note, waited_s=waited)

    def answered(self, conversation: str, usage: Usage) -> None:
        """The upstream answered with ``usage``: the conversation's next step carries it."""
        self.book.answered(conversation, usage)

    def _publish(self, loop_id: str, index: int, step: Step, usage: Usage | None) -> None:
        fields: dict[str, Any] = {"event_id": derived_id("gateway-step", loop_id, str(index))}
        if usage:
            fields["resource_usage"] = dict(usage)
        if step.kind == "heard":
            self.guard.publish(
                loop_id, HEARD_ACTION, turn="counterpart", result=step.text, **fields
            )
        elif step.kind == "said":
            self.guard.publish(loop_id, SAID_ACTION, turn="message", result=step.text, **fields)
        else:
            tool = step.tool or "tool"
            call = tool_call_fields(
                step.args,
                tool=tool,
                result=None if step.error else step.text,
                error=(step.text or "error") if step.error else None,
                tool_call_id=step.call_id,
            )
            self.guard.publish(loop_id, tool, **call, **fields)
