"""The one way a capability keeps an idle-state sweeper to the partitions it owns.

Monitor loops, guardrail families and open experience tasks expire the same way:
an :class:`~loopwarden.streams.runtime.state.expiry.IdleLoopSweeper` is told when a key
is written and says which keys of a partition went idle. What it knows must
follow the consumer's assignment: a revoked partition's keys are no longer ours
to delete, an assigned one may have changed elsewhere meanwhile and is scanned
afresh. :func:`follow_assignment` connects that to Faust's rebalance signals.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from loopwarden.streams.runtime.state.expiry import IdleLoopSweeper


def follow_assignment(
    app: Any,
    sweeper: IdleLoopSweeper,
    topic: str,
    before_revoke: Callable[[], None] | None = None,
) -> None:
    """Forget ``topic``'s partitions in ``sweeper`` when they are revoked (after
    ``before_revoke``: e.g. write pending state) and when they are assigned again."""

    def partitions(changed: Any) -> set[int]:
        return {tp.partition for tp in changed if tp.topic == topic}

    async def revoked(sender: Any, changed: Any = (), **kwargs: Any) -> None:
        if before_revoke is not None:
            before_revoke()
        sweeper.forget_partitions(partitions(changed))

    async def assigned(sender: Any, changed: Any = (), **kwargs: Any) -> None:
        sweeper.forget_partitions(partitions(changed))

    app.on_partitions_revoked.connect(revoked)
    app.on_partitions_assigned.connect(assigned)
