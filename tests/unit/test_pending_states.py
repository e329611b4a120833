"""The loop states kept until a commit: written in chunks that let records run between
them, and never leaving a committed record's state behind."""

from __future__ import annotations

import asyncio
import itertools

from loopwarden.agents.monitor.state import LoopState
from loopwarden.streams.runtime.state.pending_states import PendingStates


class TableOfSnapshots:
    """The table side of a store: snapshots by key, and the order they were put in."""

    def __init__(self) -> None:
        self.values: dict[bytes, bytes] = {}
        self.puts: list[bytes] = []

    def get(self, key: bytes) -> bytes | None:
        return self.values.get(key)

    def put(self, key: bytes, value: bytes, partition: int) -> None:
        self.values[key] = value
        self.puts.append(key)

    def delete(self, key: bytes, partition: int) -> None:
        del self.values[key]
        self.puts.append(b"deleted " + key)


def _kept(count: int) -> tuple[PendingStates, TableOfSnapshots, list[LoopState]]:
    table = TableOfSnapshots()
    pending = PendingStates(table, restore=LoopState.restore)
    states = [LoopState(f"loop-{n}", partition=n % 4, seq=1) for n in range(count)]
    for state in states:
        pending.keep(state.loop_id.encode(), state, state.partition)
    return pending, table, states


async def test_a_commit_write_lets_the_event_loop_run_between_chunks():
    pending, table, _ = _kept(1_000)
    written_between_steps: list[int] = []

    async def records_meanwhile() -> None:
        while len(table.puts) < 1_000:
            written_between_steps.append(len(table.puts))
            await asyncio.sleep(0)

    await asyncio.gather(pending.write_gradually(chunk=50), records_meanwhile())

    assert len(table.values) == 1_000 and len(pending) == 0
    steps = sorted(set(written_between_steps))
    assert len(steps) >= 1_000 // 50 - 1  # the other task ran after (nearly) every chunk
    assert max(b - a for a, b in itertools.pairwise(steps)) <= 50


async def test_states_changed_during_a_gradual_write_are_written_or_kept_for_the_next():
    pending, table, states = _kept(200)
    early, late = states[0], states[-1]  # written by the first chunk, by the last

    async def a_record_after_the_first_chunk() -> None:
        await asyncio.sleep(0)
        assert early.loop_id.encode() in table.values
        assert late.loop_id.encode() not in table.values
        for state in (early, late):
            state.seq = 2
            pending.keep(state.loop_id.encode(), state, state.partition)
        for state in states:  # what a record loads is always the latest state
            assert pending.load(state.loop_id.encode()).seq == state.seq

    await asyncio.gather(pending.write_gradually(chunk=50), a_record_after_the_first_chunk())

    stored = {
        s.loop_id: LoopState.restore(s.loop_id, table.values[s.loop_id.encode()]) for s in states
    }
    assert stored[late.loop_id].seq == 2  # changed before its turn: written with the change
    assert stored[early.loop_id].seq == 1  # changed after its turn: kept for the next write
    assert len(pending) == 1 and pending.load(early.loop_id.encode()).seq == 2
    assert table.puts.count(early.loop_id.encode()) == 1
    pending.write()
    assert LoopState.restore(early.loop_id, table.values[early.loop_id.encode()]).seq == 2


async def test_a_state_written_or_dropped_before_its_turn_is_not_written_again():
    pending, table, states = _kept(120)
    dropped, flushed = states[100], states[110]

    async def meanwhile() -> None:
        await asyncio.sleep(0)
        assert pending.drop(dropped.loop_id.encode())  # its record failed
        pending.write()  # a sweep wrote everything kept

    await asyncio.gather(pending.write_gradually(chunk=50), meanwhile())

    assert dropped.loop_id.encode() not in table.values
    assert table.puts.count(flushed.loop_id.encode()) == 1
    assert len(table.puts) == 119 and len(pending) == 0


async def test_a_state_kept_as_ended_is_found_no_more_and_deleted_at_the_write():
    pending, table, states = _kept(3)
    pending.write()
    ended = states[1].loop_id.encode()
    pending.keep(ended, None, states[1].partition)  # its task ended
    assert pending.load(ended) is None  # though the table still holds it
    assert ended in table.values
    await pending.write_gradually()
    assert ended not in table.values and table.puts[-1] == b"deleted " + ended
    assert pending.load(states[0].loop_id.encode()) is not None
