"""Families of delegated loops in the crash scenario: a delegation cycle per family,
its loops spread over partitions, and the fleet's outputs expected offline."""

from __future__ import annotations

from typing import Any

from loopwarden.agents.fleet.records import decide_offline
from loopwarden.schemas import codec
from loopwarden.schemas.events import ActionEvent
from loopwarden.settings import Settings
from loopwarden.streams.client.event_builder import make_action_event

TASK = "Reconcile the ledger of account 4471 for October"


def family_events(tag: str, families: int, start: float) -> list[list[ActionEvent]]:
    """Per family: a planner and a clerk handing one task back and forth over six loops
    (warned at the fifth, stopped at the sixth), two events a loop, in publish order."""
    out = []
    for f in range(families):
        root = f"fam-{tag}-{f}"
        events: list[ActionEvent] = []
        parent = None
        for n in range(6):
            loop = root if n == 0 else f"{root}-c{n}"
            family = {} if parent is None else {"parent_loop_id": parent, "root_loop_id": root}
            agent = "planner" if n % 2 == 0 else "clerk"
            for step in range(2):
                events.append(
                    make_action_event(
                        loop,
                        "delegate" if step else "read_ledger",
                        occurred_at=start + f * 0.5 + n * 0.05 + step * 0.01,
                        agent=agent,
                        params={"step": step},
                        **({"task": TASK} if step == 0 else {}),
                        **family,
                    )
                )
            parent = loop
        out.append(events)
    return out


def expected_fleet(
    events: list[ActionEvent], settings: Settings
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """(fleet warnings, the loops' own fleet warnings) by id, as the worker's fleet role
    decides them: each family's events in publish order (they share its root's partition)."""
    out = decide_offline(settings, events)
    fleet = {w["warning_id"]: codec.loads(codec.dumps(w)) for w in out.fleet_warnings}
    warnings = {w["warning_id"]: codec.loads(codec.dumps(w)) for w in out.warnings}
    return fleet, warnings
