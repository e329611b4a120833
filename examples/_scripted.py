"""What the examples share: a stand-in for an LLM that keeps making the same tool call.

A real model takes a second or more per call; the stand-in "thinks" until loopwarden's
verdict on the calls so far is in (at most ``THINK_S``), so the examples show what a
real agent sees without an API key.
"""

from __future__ import annotations

from loopwarden.adapters.guard import LoopGuard

THINK_S = 1.5
MAX_CALLS = 16


def think(guard: LoopGuard, loop_id: str) -> None:
    """Wait like a model call would, returning early when a new warning arrives."""
    guard.inbox.wait(loop_id, count=guard.inbox.seen(loop_id) + 1, timeout_s=THINK_S)


def report(loop_id: str, calls: int, warned: int, stopped: str | None) -> None:
    print(f"loop {loop_id}: {calls} model calls, {warned} with loopwarden's warnings")
    if stopped:
        print(f"stopped: {stopped}")
    else:
        print(
            "not stopped: run the worker with LOOPWARDEN_DETECTION__PROFILE=patterns "
            "for the warn → escalate → final → stop ladder"
        )
