"""One record through a keyed processor, with states read the way a test chooses.

For a run of records over live states, tests use
:class:`~loopwarden.streams.runtime.state.offline.OfflineStates`; :func:`process_one`
is for the rest: a record with no states at all, or states read back from snapshots.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from loopwarden.schemas.dead_letter import SourcePosition
from loopwarden.schemas.positions import Origin
from loopwarden.streams.runtime.state.protocol import KeyedDeclaration, KeyedRecord


def process_one(
    processor: Any,
    declaration: KeyedDeclaration[Any],
    value: bytes | None,
    key: bytes | None,
    source: SourcePosition,
    load: Callable[[str], Any] = lambda key: None,
    *,
    origin: Origin | None = None,
    headers: Sequence[Any] = (),
    idle_ttl_s: float = float("inf"),
) -> Any:
    """``processor``'s outcome for one record whose states ``load`` reads (none by
    default), as the kit's core hands it (a view of ``declaration`` with ``idle_ttl_s``)."""
    view = declaration.view(load, idle_ttl_s, source.partition)
    return processor.process(KeyedRecord(value, key, headers, source, origin), view)
