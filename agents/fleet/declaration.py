"""How the fleet keeps its families and tools: the declaration of the ``fleet-family`` table."""

from __future__ import annotations

from loopwarden.agents.fleet.state import FamilyState
from loopwarden.agents.fleet.tool_outage import TOOL_KEY_PREFIX, ToolOutages
from loopwarden.streams.runtime.state.expiry import snapshot_expiry
from loopwarden.streams.runtime.state.protocol import KeyedDeclaration

FleetState = FamilyState | ToolOutages
"""A family's state (by root loop id) or a tool's outage state (by tool key)."""


def restore_state(key: str, data: bytes) -> FleetState:
    """A stored snapshot: a tool's outage state (``tool\x1f…``) or a family's."""
    if key.startswith(TOOL_KEY_PREFIX):
        return ToolOutages.restore(key[len(TOOL_KEY_PREFIX) :], data)
    return FamilyState.restore(key, data)


def fresh_family(root: str, idle: FleetState | None) -> FleetState:
    """A new family state; after an idle one, its applied positions stay known."""
    return FamilyState(root) if idle is None else FamilyState(root, applied=idle.applied)


FAMILY_STATES: KeyedDeclaration[FleetState] = KeyedDeclaration(
    table="fleet-family",
    help="Per-family fleet state (loop tree, sums, ladder, fleet detectors).",
    home_topic=lambda t: t.actions,
    reroute_topic=lambda t: t.fleet_reroute,
    restore=restore_state,
    peek_expiry=snapshot_expiry,
    seen_at=lambda state: state.updated_at,
    fresh=fresh_family,
    idle_ttl_s=lambda s: s.fleet.idle_family_ttl_s,
    ttl_setting="fleet.idle_family_ttl_s",
    noun="famil(ies)",
)
"""Families by root loop id, and tools' outage state by tool key."""
