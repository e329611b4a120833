"""The state an event applies to: this record's copy, the stored one, a new one, or a
fresh one after an idle spell longer than the TTL (event time)."""

from __future__ import annotations

from dataclasses import dataclass, field

from loopwarden.streams.runtime.state.current import current_state


@dataclass
class Counter:
    key: str
    seen: float = 0.0
    count: int = 0
    applied: set[int] = field(default_factory=set)


def new(key: str, idle: Counter | None) -> Counter:
    return Counter(key) if idle is None else Counter(key, applied=idle.applied)


def lookup(changed: dict, stored: dict, at: float, ttl: float = 60.0) -> Counter:
    return current_state("k", changed, stored.get, new, lambda c: c.seen or None, at, ttl)


def test_the_records_own_copy_comes_before_the_stored_state():
    mine, stored = Counter("k", seen=100, count=2), Counter("k", seen=100, count=1)
    assert lookup({"k": mine}, {"k": stored}, at=110) is mine
    assert lookup({}, {"k": stored}, at=110) is stored


def test_an_unknown_key_gets_a_new_state():
    state = lookup({}, {}, at=5)
    assert (state.key, state.count, state.applied) == ("k", 0, set())


def test_a_key_idle_past_the_ttl_starts_afresh_but_keeps_its_applied_positions():
    idle = Counter("k", seen=100, count=7, applied={1, 2})
    at_ttl = lookup({}, {"k": idle}, at=160)
    fresh = lookup({}, {"k": idle}, at=160.5)
    assert at_ttl is idle  # exactly the TTL is not past it
    assert fresh is not idle and (fresh.count, fresh.applied) == (0, {1, 2})


def test_a_state_that_saw_no_event_yet_is_not_idle():
    untouched = Counter("k", seen=0.0, count=0, applied={3})
    assert lookup({}, {"k": untouched}, at=10_000) is untouched


def test_event_time_zero_is_a_time_where_the_capability_says_so():
    seen_at_zero = Counter("k", seen=0.0, count=1)
    ttl_later = current_state("k", {}, {"k": seen_at_zero}.get, new, lambda c: c.seen, 61, 60)
    assert ttl_later is not seen_at_zero and ttl_later.count == 0
