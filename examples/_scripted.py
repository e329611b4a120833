"""What the examples share: a stand-in for an LLM that keeps making the same tool call.

The stand-in answers at once, with no API key: the adapters themselves wait, bounded
(``adapters.verdict_wait_ms``), for loopwarden's verdict on each tool result before
the next model call, so even an instant model reads each warning at the very next call.
"""

from __future__ import annotations

MAX_CALLS = 16


def report(loop_id: str, calls: int, warned: int, stopped: str | None) -> None:
    print(f"loop {loop_id}: {calls} model calls, {warned} with loopwarden's warnings")
    if stopped:
        print(f"stopped: {stopped}")
    else:
        print(
            "not stopped: run the worker with LOOPWARDEN_DETECTION__PROFILE=patterns "
            "for the warn → escalate → final → stop ladder"
        )
