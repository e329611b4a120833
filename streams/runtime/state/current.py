"""The state an event applies to, the same way in every keyed processor.

Each keyed processor (the monitor's loops, the fleet's and the guardrails' families)
looks a key's state up in one order: the copy this record already changed, else the
stored one; a new state when there is none; and a fresh one when the key was idle
longer than its TTL of *event* time (so the worker, ``detect`` and ``replay`` decide
expiry alike, whatever the wall clock did). What a fresh state keeps of the idle one
(its applied positions, so a record processed again after a restart is still
recognised) is the capability's ``new``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

S = TypeVar("S")


def current_state(
    key: str,
    changed: Mapping[str, S],
    load: Callable[[str], S | None],
    new: Callable[[str, S | None], S],
    seen_at: Callable[[S], float | None],
    occurred_at: float,
    idle_ttl_s: float,
) -> S:
    """The state of ``key`` that an event of ``occurred_at`` applies to.

    ``changed``: the states this record changed so far; ``load``: the stored state or
    None; ``new(key, idle)``: a new state, fresh after ``idle`` when it is given;
    ``seen_at``: a state's event time (None: it saw no event yet, it is never idle).
    """
    state = changed.get(key) or load(key)
    if state is None:
        return new(key, None)
    last = seen_at(state)
    if last is not None and occurred_at - last > idle_ttl_s:
        return new(key, state)
    return state
