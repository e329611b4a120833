"""How the guardrails keep their families: the declaration of the ``loop-family`` table."""

from __future__ import annotations

from loopwarden.agents.guardrails.state import FamilyState
from loopwarden.streams.runtime.state.expiry import snapshot_expiry
from loopwarden.streams.runtime.state.protocol import KeyedDeclaration


def fresh_family(family: str, idle: FamilyState | None) -> FamilyState:
    """A new family state; after an idle one, its applied positions stay known."""
    return FamilyState(family) if idle is None else FamilyState(family, applied=idle.applied)


FAMILY_STATES: KeyedDeclaration[FamilyState] = KeyedDeclaration(
    table="loop-family",
    help="Per-family guardrail state (traces, fatigue, reruns, bias history, overrides).",
    home_topic=lambda t: t.loop_completions,
    reroute_topic=lambda t: t.completions_reroute,
    restore=FamilyState.restore,
    peek_expiry=snapshot_expiry,
    seen_at=lambda state: state.updated_at,
    fresh=fresh_family,
    idle_ttl_s=lambda s: s.limits.idle_family_ttl_s,
    ttl_setting="limits.idle_family_ttl_s",
    noun="famil(ies)",
    writes="every_record",  # the HTTP API reads families straight from the table
)
"""Families by family id (a loop and its reruns), on the completions topic's partitions."""
