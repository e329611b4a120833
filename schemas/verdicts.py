"""Verdicts: a role's answer to every action event, so that a guard waits only as long
as the worker takes.

A worker's answering roles (the monitor and the fleet: those that warn about a loop's
own events) answer each action event they apply or skip on the verdicts topic, keyed by
the event's loop: how many warnings that role sent about the event for that loop (0:
nothing to say) — one verdict per loop and input record, naming each of its events (a
guard's record holds one event; a batched producer's, up to 50). A guard waiting before
its agent's next model call ends its wait when every answering role it has heard of
has answered and the warnings they announced have arrived
(:mod:`loopwarden.streams.client.inbox`), instead of waiting out its bound on every
healthy step.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from loopwarden.schemas.events import SCHEMA_VERSION
from loopwarden.schemas.outputs import HEADER, VerdictRecord


class Verdict(BaseModel):
    """One role's answer to action events of one loop."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    schema_version: int = SCHEMA_VERSION
    type: Literal["verdict"] = "verdict"
    loop_id: str
    role: str = Field(description="The worker role that answers (monitor, fleet).")
    answers: dict[str, int] = Field(
        description="Event id → warnings this role sent about that event for this loop "
        "(on the warnings topic, trigger_event_id = the event id); 0: nothing to say."
    )
    roles: list[str] = Field(
        default_factory=list,
        description="Every answering role of the worker that sent it: a guard waits for "
        "each of them.",
    )
    at: float = Field(description="When it was sent (Unix seconds, the worker's clock).")


def verdict_record(
    loop_id: str, role: str, answers: dict[str, int], roles: Iterable[str], at: float
) -> VerdictRecord:
    """A verdict record (the worker's one constructor of them)."""
    record: VerdictRecord = {
        **HEADER,
        "type": "verdict",
        "loop_id": loop_id,
        "role": role,
        "answers": answers,
        "roles": sorted(roles),
        "at": at,
    }
    return record
