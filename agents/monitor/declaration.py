"""How the monitor keeps its loops: the keyed-state declaration of the ``loop-state`` table."""

from __future__ import annotations

from loopwarden.agents.monitor.state import LoopState
from loopwarden.streams.runtime.state.protocol import KeyedDeclaration


def fresh_loop(loop_id: str, idle: LoopState | None) -> LoopState:
    """A new loop state; after an idle one, its partition and applied positions are kept
    (a record processed again after a restart is still recognised)."""
    if idle is None:
        return LoopState(loop_id)
    return LoopState(loop_id, partition=idle.partition, applied=idle.applied)


LOOP_STATES: KeyedDeclaration[LoopState] = KeyedDeclaration(
    table="loop-state",
    help="Per-loop monitor state (window, counters, reflections).",
    home_topic=lambda t: t.actions,
    reroute_topic=lambda t: t.actions_reroute,
    restore=LoopState.restore,
    peek_expiry=LoopState.peek_expiry,
    seen_at=lambda state: state.last_seen or None,  # 0: the loop saw no event yet
    fresh=fresh_loop,
    idle_ttl_s=lambda s: s.limits.idle_loop_ttl_s,
    ttl_setting="limits.idle_loop_ttl_s",
    noun="loop(s)",
    sweep_quiet_partitions=True,
    cache_states=lambda s: s.limits.state_cache_loops,
)
"""The loop states: one per loop id, on the actions topic's partitions."""
