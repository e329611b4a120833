"""The crash scenario's post-mortem: where each loop's events went (pure, no broker)."""

from __future__ import annotations

from faultsuite.postmortem import applied_by_loop, events_by_loop, state_gaps

from loopwarden.schemas import codec


def _state(seq: int) -> bytes:
    return codec.dumps_state({"v": 3, "seq": seq})


def test_events_are_grouped_by_loop_from_single_and_batched_records():
    values = [
        codec.dumps({"loop_id": "a", "event_id": "a1"}),
        codec.dumps([{"loop_id": "a", "event_id": "a2"}, {"loop_id": "b", "event_id": "b1"}]),
        None,  # a tombstone holds no event
        codec.dumps({"loop_id": "a", "event_id": "a1"}),  # published twice: one event
    ]
    assert events_by_loop(values) == {"a": {"a1", "a2"}, "b": {"b1"}}


def test_the_last_stored_state_of_a_loop_counts_and_a_tombstone_forgets_it():
    changelog = [
        (b"a", _state(3)),
        (b"b", _state(1)),
        (b"a", _state(5)),
        (b"b", None),
    ]
    assert applied_by_loop(changelog) == {"a": 5}


def test_gaps_say_whether_the_broker_or_the_worker_lost_an_event():
    published = {"whole": {"1", "2"}, "short_topic": {"3", "4"}, "short_state": {"5", "6"}}
    in_topic = {"whole": {"1", "2"}, "short_topic": {"3"}, "short_state": {"5", "6"}}
    applied = {"whole": 2, "short_topic": 1, "short_state": 1}
    gaps = state_gaps(published, in_topic, applied)
    assert gaps.not_in_topic == {"short_topic": 1}
    assert gaps.not_applied == {"short_state": "applied 1 of 2"}
    assert (gaps.loops_not_in_topic, gaps.loops_not_applied) == (1, 1)


def test_a_loop_without_any_stored_state_counts_as_applying_nothing():
    gaps = state_gaps({"a": {"1"}}, {"a": {"1"}}, {})
    assert gaps.not_applied == {"a": "applied 0 of 1"}
