"""Loop states changed since the last offset commit, written to the table once per commit.

A busy loop changes with every message (a bundle of records), and encoding and
compressing its snapshot into the table and the changelog each time cost about
a third of the worker's detection work: a loop touched fifteen times between two
commits was written fifteen times. :class:`PendingStates` keeps each changed
loop's live state instead and writes the snapshots when it must:

- before every offset commit (the sink's
  :meth:`~loopwarden.streams.runtime.sink.RecordSink.before_commit` hook): a commit
  never passes an event whose state is not durable. That write is gradual
  (:meth:`PendingStates.write_gradually`): a thousand loops cost about 30 ms
  of snapshots, and written in one go they held every event that arrived
  meanwhile (the paced p99 was a commit's write);
- when it holds ``limit`` loops (its memory stays bounded);
- before a sweep reads the table, and when partitions are revoked (another
  worker is about to read their changelog).

A state written later than its events is safe: it always holds whole records
(the worker awaits only between records), the changelog is delivered after the
outputs (``deliver_last``), and an event replayed after a crash is recognised
by the applied positions the state keeps.

The price is paid only when a record fails with a bug: the loops it touched go
back to their last written state, which may be up to one commit interval old
(it was one message old when every message wrote its states).

A state kept as None has ended (an experience task at its end): :meth:`load` finds
nothing and the write deletes it from the table (a changelog tombstone).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any, Protocol

DEFAULT_LIMIT = 10_000
"""Loops kept before an early write: about 36 MB of decoded states."""
WRITE_CHUNK = 64
"""Snapshots a gradual write makes before it lets the event loop run (about 2 ms)."""


class StateStore(Protocol):
    """Where snapshots go (:class:`~loopwarden.streams.runtime.table_store.TableStore`)."""

    def get(self, key: bytes) -> bytes | None: ...

    def put(self, key: bytes, value: bytes, partition: int) -> None: ...

    def delete(self, key: bytes, partition: int) -> None: ...

    def keys(self) -> Iterable[bytes]: ...


class PendingStates:
    """The live state of each loop changed since the last write, and its partition."""

    def __init__(
        self,
        store: StateStore,
        limit: int = DEFAULT_LIMIT,
        *,
        restore: Callable[[str, bytes], Any],
    ) -> None:
        """``restore`` decodes a stored snapshot (key as text, bytes): a loop's for the
        monitor, a family's for the fleet; any state with ``snapshot()`` is kept alike."""
        self.store = store
        self.limit = limit
        self.restore = restore
        self._kept: dict[bytes, tuple[Any | None, int]] = {}

    def __len__(self) -> int:
        return len(self._kept)

    def keep(self, key: bytes, state: Any | None, partition: int) -> None:
        """Keep ``state`` until the next write (None: delete it then); write everything
        at ``limit`` loops."""
        self._kept[key] = (state, partition)
        if len(self._kept) >= self.limit:
            self.write()

    def holds(self, key: bytes) -> bool:
        """True when a state (or an end) of ``key`` is kept, not yet written."""
        return key in self._kept

    def load(self, key: bytes) -> Any:
        """The kept state, else the stored one (decoded), else None."""
        kept = self._kept.get(key)
        if kept is not None:
            return kept[0]  # None: ended since the last write
        data = self.store.get(key)
        return self.restore(key.decode(), data) if data else None

    def drop(self, key: bytes) -> bool:
        """Forget the loop's kept state (it failed half-way); True when one was kept."""
        return self._kept.pop(key, None) is not None

    def write(self) -> None:
        """Snapshot every kept state into the table (and its changelog) and forget them."""
        if not self._kept:
            return
        kept, self._kept = self._kept, {}
        for key, (state, partition) in kept.items():
            self._store(key, state, partition)

    async def write_gradually(self, chunk: int = WRITE_CHUNK) -> None:
        """Write every state kept now, ``chunk`` at a time, yielding to the event loop
        between chunks.

        Records processed meanwhile are not part of the commit under way (its offsets
        were taken before), so it needs only the states kept when it began. A state a
        later record changes before its turn is written with that change (ahead of the
        commit: safe, its applied positions recognise a replay); one changed after its
        turn is kept again for the next write. A kept state is taken out and put in the
        table in one step, so :meth:`load` always finds the latest.
        """
        keys = list(self._kept)
        for start in range(0, len(keys), chunk):
            self._write_keys(keys[start : start + chunk])
            if start + chunk < len(keys):
                await asyncio.sleep(0)

    def _write_keys(self, keys: Iterable[bytes]) -> None:
        kept = self._kept
        for key in keys:
            item = kept.pop(key, None)
            if item is not None:  # else written (or dropped) since the write began
                self._store(key, *item)

    def _store(self, key: bytes, state: Any | None, partition: int) -> None:
        if state is None:
            self.store.delete(key, partition)
        else:
            self.store.put(key, state.snapshot(), partition)
