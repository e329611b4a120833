"""Which loop a model request belongs to, and which of its steps are new (pure).

A request names its loop with ``x-loopwarden-loop`` (and its family with
``x-loopwarden-parent-loop``, ``x-loopwarden-root-loop``, ``x-loopwarden-agent``,
``x-loopwarden-task``). Without one, the loop is the conversation's **fingerprint**:
``gw-`` and 24 hex digits of a BLAKE2b digest of the API and the conversation's start
(its system prompt or instructions, and its first user turn) — the same across every
request of one run, since each carries the conversation from its start. A conversation
that starts over (fewer steps than were published for it: the same task run again) is
the next run: ``gw-…-1``, ``gw-…-2``. Two runs of the same task at the same time share
a fingerprint; give them a header each.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from cachetools import TTLCache

from loopwarden.gateway.steps import Usage
from loopwarden.schemas.ids import derived_id

LOOP_HEADER = "x-loopwarden-loop"
FAMILY_HEADERS = {
    "x-loopwarden-parent-loop": "parent_loop_id",
    "x-loopwarden-root-loop": "root_loop_id",
    "x-loopwarden-agent": "agent",
    "x-loopwarden-task": "task",
}


def fingerprint(dialect: str, start: str) -> str:
    """The loop id of a conversation that names none (module docstring)."""
    return "gw-" + derived_id("gateway-loop", dialect, start)[:24]


def family_of(headers: Mapping[str, str]) -> dict[str, str]:
    """The family fields the request's headers give (``parent_loop_id`` …)."""
    return {name: headers[h] for h, name in FAMILY_HEADERS.items() if headers.get(h)}


@dataclass(slots=True)
class _Conversation:
    run: int = 0
    published: int = 0
    usage: Usage = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Turn:
    """What one request brings: its conversation's key, its loop, the index of its first
    new step, and the usage of the previous answer (to put on the first step published
    now)."""

    key: str
    loop_id: str
    first_new: int
    usage: Usage


class LoopBook:
    """Per conversation: its current run and how many of its steps were published."""

    def __init__(self, max_loops: int = 10_000, ttl_s: float = 3600.0) -> None:
        self._conversations: TTLCache[str, _Conversation] = TTLCache(max_loops, ttl_s)

    def turn(self, named: str | None, dialect: str, start: str, steps: int) -> Turn:
        """The loop of a request with ``steps`` steps (``named``: its header's loop id),
        and its new steps from :attr:`Turn.first_new` on; they count as published."""
        key = named or fingerprint(dialect, start)
        conversation = self._conversations.get(key)
        if conversation is None:
            conversation = self._conversations[key] = _Conversation()
        if steps < conversation.published:
            if named:  # a named loop's conversation was cut short: nothing new in it
                conversation.published = steps
            else:  # started over: the next run of the same task
                conversation.run += 1
                conversation.published = 0
        first_new = conversation.published
        conversation.published = steps
        usage, conversation.usage = conversation.usage, {}
        loop_id = key if named or not conversation.run else f"{key}-{conversation.run}"
        return Turn(key, loop_id, first_new, usage)

    def answered(self, key: str, usage: Usage) -> None:
        """The answer to conversation ``key`` (:attr:`Turn.key`) reported ``usage``: the
        next step published carries it."""
        conversation = self._conversations.get(key)
        if conversation is not None and usage:
            conversation.usage = dict(usage)
