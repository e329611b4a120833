"""The keyed-state kit's core without a broker: the state a record applies to, the
revert of a failed record or batch, idle expiry and the decoded-state cache — each
driven through :class:`KeyedHarness`, the same :class:`KeyedCore` the worker drives."""

from __future__ import annotations

from dataclasses import dataclass, field

import orjson
import pytest

from loopwarden.schemas.dead_letter import SourcePosition
from loopwarden.schemas.positions import Origin
from loopwarden.settings import Settings
from loopwarden.streams.runtime.state.harness import KeyedHarness
from loopwarden.streams.runtime.state.protocol import KeyedDeclaration, KeyedOutcome, KeyedRecord
from loopwarden.streams.runtime.state.view import StateView


@dataclass
class Counter:
    """A toy state: how many events a key saw, and when it saw the last one."""

    key: str
    seen: float = 0.0
    count: int = 0
    applied: list[int] = field(default_factory=list)
    partition: int = 0

    def snapshot(self) -> bytes:
        return orjson.dumps([self.seen, self.count, self.applied, self.partition])

    @classmethod
    def restore(cls, key: str, data: bytes) -> Counter:
        seen, count, applied, partition = orjson.loads(data)
        return cls(key, seen, count, applied, partition)


def fresh(key: str, idle: Counter | None) -> Counter:
    return Counter(key) if idle is None else Counter(key, applied=idle.applied)


COUNTERS: KeyedDeclaration[Counter] = KeyedDeclaration(
    table="toy-counters",
    help="Events per key.",
    home_topic=lambda t: t.actions,
    reroute_topic=lambda t: t.actions_reroute,
    restore=Counter.restore,
    peek_expiry=lambda data: (orjson.loads(data)[3], orjson.loads(data)[0]),
    seen_at=lambda state: state.seen or None,
    fresh=fresh,
    idle_ttl_s=lambda s: 60.0,
    ttl_setting="toy.ttl",
    noun="counter(s)",
)


@dataclass(slots=True)
class CountOutcome(KeyedOutcome[Counter]):
    counted: list[tuple[str, int]] = field(default_factory=list)

    def outputs(self):
        for key, count in self.counted:
            yield "counts", {"key": key, "count": count}


class CountProcessor:
    """Records are JSON lists of [key, event time]; a key named "boom" raises after
    the record's earlier keys were changed in place."""

    def process(self, record: KeyedRecord, view: StateView[Counter]) -> CountOutcome:
        outcome = CountOutcome(states=view.changed)
        source = record.source
        for index, (name, at) in enumerate(orjson.loads(record.value)):
            if name == "boom":
                raise RuntimeError("a bug half-way through the record")
            state = view.current(name, at)
            position = Origin(source.partition, source.offset, index)
            if position.offset in state.applied:
                continue
            state.count += 1
            state.seen = at
            state.applied = [*state.applied, position.offset][-4:]
            outcome.states[name] = state
            outcome.counted.append((name, state.count))
            outcome.events += 1
        return outcome


def record(*events: tuple[str, float]) -> bytes:
    return orjson.dumps(list(events))


def counts(kit: KeyedHarness) -> dict[str, int]:
    return {key.decode(): Counter.restore(key.decode(), v).count for key, v in kit.table.items()}


def test_states_are_restored_from_their_snapshots_between_records():
    kit = KeyedHarness(COUNTERS, CountProcessor())
    kit.feed(record(("a", 10), ("b", 10)))
    kit.feed(record(("a", 20)))
    assert counts(kit) == {"a": 2, "b": 1}
    assert [value for name, value in kit.outputs if name == "counts"][-1] == {
        "key": "a",
        "count": 2,
    }


def test_a_key_idle_past_the_ttl_starts_afresh_and_keeps_its_applied_positions():
    kit = KeyedHarness(COUNTERS, CountProcessor())
    kit.feed(record(("a", 100)))
    kit.feed(record(("a", 160)))  # exactly the TTL: not past it
    kit.feed(record(("a", 220.5)))  # past it: a fresh state
    state = kit.load("a")
    assert state is not None and state.count == 1 and state.applied == [0, 1, 2]


def test_a_failed_record_puts_back_what_it_changed_and_keeps_the_rest():
    kit = KeyedHarness(COUNTERS, CountProcessor())
    kit.feed(record(("a", 10), ("b", 10)))
    with pytest.raises(RuntimeError):
        kit.feed(record(("a", 11), ("boom", 11)))  # "a" was counted in place, then it broke
    assert counts(kit) == {"a": 1, "b": 1}
    assert kit.load("a").count == 1  # not the half-updated copy
    kit.feed(record(("a", 12)))
    assert counts(kit) == {"a": 2, "b": 1}


def test_a_revert_at_commit_goes_back_to_the_last_written_state_not_the_last_record():
    """With writes at commit, states of earlier records are pending: a failure reverts
    the keys it touched to the last *written* state and leaves the others pending."""
    kit = KeyedHarness(COUNTERS, CountProcessor())
    core = kit.core
    kit.feed(record(("a", 10)))  # written
    for value in (record(("a", 11)), record(("b", 11))):  # pending, not written
        core.begin()
        core.apply(KeyedRecord(value, None, (), SourcePosition(core.home, 0, 5)))
    core.begin()
    with pytest.raises(RuntimeError):
        core.apply(
            KeyedRecord(record(("a", 12), ("boom", 12)), None, (), SourcePosition(core.home, 0, 7))
        )
    assert core.revert() == 1  # "a" was pending: it goes back to its written state
    core.commit()
    assert counts(kit) == {"a": 1, "b": 1}


def test_a_batch_whose_settle_step_raises_is_reverted_whole():
    def settle(outcomes):
        for outcome in outcomes:
            for state in outcome.states.values():
                state.count += 100  # the I/O step changes states, then fails
        raise ConnectionError("the store is away")

    kit = KeyedHarness(COUNTERS, CountProcessor())
    kit.feed(record(("a", 10)))
    kit.settle = settle
    with pytest.raises(ConnectionError):
        kit.feed_batch([(record(("a", 11)), None), (record(("b", 11)), None)])
    assert counts(kit) == {"a": 1}
    assert kit.load("a").count == 1 and kit.load("b") is None
    kit.settle = lambda outcomes: [("settled", len(outcomes))]
    kit.feed_batch([(record(("a", 11)), None), (record(("b", 11)), None)])
    assert counts(kit) == {"a": 2, "b": 1} and kit.named("settled") == [2]


def test_the_idle_sweep_reclaims_keys_past_the_ttl_behind_the_partitions_newest_event():
    settings = Settings.model_validate({"limits": {"max_clock_skew_s": 5}})
    kit = KeyedHarness(COUNTERS, CountProcessor(), settings)
    kit.feed(record(("old", 100), ("recent", 150)))
    kit.feed(record(("new", 200)))
    assert kit.expire(partition=0) == [b"old"]  # 200 - 60 - 5 > 100; not 150
    assert sorted(kit.table) == [b"new", b"recent"]
    assert (b"old", None, 0) in kit.store.changelog  # a tombstone
    assert kit.expire(partition=0, now_monotonic=0.0) == []  # not due again yet


def test_the_idle_sweep_writes_no_kept_state_and_reclaims_kept_ones_past_the_ttl():
    """Issue 71: each partition's sweep wrote every kept state first (3 % of a saturated
    worker); the sweeper's index already holds their event times. A kept state past the
    TTL is reclaimed all the same, and not written back at the next commit."""
    settings = Settings.model_validate({"limits": {"max_clock_skew_s": 5}})
    kit = KeyedHarness(COUNTERS, CountProcessor(), settings)
    kit.feed(record(("written", 150)))  # written at its commit
    core = kit.core
    core.begin()
    core.apply(
        KeyedRecord(record(("old", 100), ("new", 200)), None, (), SourcePosition(core.home, 0, 1))
    )
    core.done()  # "old" and "new" are kept, not written
    before = len(kit.store.changelog)
    assert core.expire(0, float("inf")) == [b"old"]  # 200 - 60 - 5 > 100
    assert kit.store.changelog[before:] == [(b"old", None, 0)]  # a tombstone, no snapshot
    core.commit()
    assert sorted(kit.table) == [b"new", b"written"]


def test_the_cache_serves_decoded_states_until_a_rebalance_and_is_bounded():
    settings = Settings.model_validate({"limits": {"state_cache_loops": 2}})
    processor = CountProcessor()
    cached = KeyedDeclaration(**{**_fields(COUNTERS), "cache_states": lambda s: 2})
    kit = KeyedHarness(cached, processor, settings)
    kit.feed(record(("a", 1)))
    kit.feed(record(("a", 2)))
    assert kit.core.load("a").count == 2 and kit.core._cache.keys() == {"a"}
    kit.core.rebalance()
    assert not kit.core._cache
    for name in "abc":
        kit.feed(record((name, 3)))
    assert list(kit.core._cache) == ["b", "c"]


def test_a_failed_record_drops_its_half_updated_states_from_the_cache():
    cached = KeyedDeclaration(**{**_fields(COUNTERS), "cache_states": lambda s: 10})
    kit = KeyedHarness(cached, CountProcessor())
    kit.feed(record(("a", 1)))
    with pytest.raises(RuntimeError):
        kit.feed(record(("a", 2), ("boom", 2)))
    assert kit.load("a").count == 1


def test_a_declaration_without_fresh_states_says_so():
    tasks = KeyedDeclaration(**{**_fields(COUNTERS), "fresh": None})
    view = tasks.view(lambda key: None, 60.0, 0)
    assert view.stored("x") is None and view.touched == {"x"}
    with pytest.raises(TypeError, match="toy-counters: the declaration makes no fresh states"):
        view.current("x", 1.0)


def _fields(declaration: KeyedDeclaration) -> dict:
    return {name: getattr(declaration, name) for name in declaration.__dataclass_fields__}
