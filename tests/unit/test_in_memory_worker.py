"""The worker's keyed capabilities driven in memory: the same cores and processors, the
real output router and dead letters, topics in a dict and a clock the test moves.

Idle-loop expiry was tested only on a broker (tests/integration/test_expiry.py, three
workers and wall-clock sleeps); here the same scenarios run on the in-memory worker,
with the sweeps' clock advanced instead of waited for.
"""

from __future__ import annotations

import itertools
import time

import pytest

from loopwarden.schemas import codec
from loopwarden.schemas.positions import default_partition
from loopwarden.schemas.warnings import LoopWarning, WarningKind
from loopwarden.settings import LimitSettings, Settings
from loopwarden.streams.client.event_builder import encode_event, make_action_event
from loopwarden.streams.runtime.in_memory import InMemoryWorker, ManualClock
from loopwarden.worker import in_memory_worker

PARTITIONS = 4


def worker_of(roles: set[str], clock: ManualClock | None = None, **limits: float) -> InMemoryWorker:
    settings = Settings().namespaced("in-memory", partitions=PARTITIONS)
    detection = settings.detection.model_copy(update={"profile": "seed"})
    update: dict = {"roles": frozenset(roles), "detection": detection}
    if limits:
        update["limits"] = LimitSettings(**limits)
    return in_memory_worker(settings.model_copy(update=update), clock)


def spins(worker: InMemoryWorker) -> list[LoopWarning]:
    """The Layer 1 warnings (action-type spins) sent so far."""
    warnings = [LoopWarning.model_validate(w) for w in worker.output("warnings")]
    return [w for w in warnings if w.kind is WarningKind.ACTION_TYPE_SPIN]


def two_loops_on_one_partition() -> tuple[str, str]:
    by_partition: dict[int, str] = {}
    for i in itertools.count():
        loop_id = f"idle-{i}"
        partition = default_partition(loop_id.encode(), PARTITIONS)
        if partition in by_partition:
            return by_partition[partition], loop_id
        by_partition[partition] = loop_id
    raise AssertionError("unreachable")


def test_a_spin_is_warned_on_the_warnings_topic_keyed_by_its_loop() -> None:
    worker = worker_of({"monitor"})
    ids = [worker.publish("loop-a", "search", params={"q": "x"}) for _ in range(3)]
    assert worker.run() == 3
    (warning,) = spins(worker)
    assert warning.event_ids == ids
    (record,) = worker.topics.records(worker.settings.topics.warnings)
    assert record.key == b"loop-a"
    assert record.partition == default_partition(b"loop-a", PARTITIONS)
    assert worker.run() == 0  # nothing left to read: nothing is processed twice


def test_an_idle_loop_forgets_its_streak() -> None:
    worker = worker_of({"monitor"}, idle_loop_ttl_s=60, expiry_sweep_interval_s=0.05)
    idle, busy = two_loops_on_one_partition()
    t0 = time.time() - 7200
    worker.publish(idle, "search", occurred_at=t0)
    worker.publish(idle, "search", occurred_at=t0 + 1)
    for i in range(3):  # event time on the partition moves 10 minutes on
        worker.publish(busy, "think", occurred_at=t0 + 600 + i)
    worker.run()
    assert [w.loop_id for w in spins(worker)] == [busy]
    worker.advance(0.2)  # the next record on the partition runs the sweep
    worker.publish(busy, "write", occurred_at=t0 + 603)
    fresh = [worker.publish(idle, "search", occurred_at=t0 + 604 + i) for i in range(3)]
    worker.run()
    # without expiry the first new "search" would have been the third in a row
    assert [(w.loop_id, w.event_ids) for w in spins(worker)[1:]] == [(idle, fresh)]


def test_a_quiet_partition_reclaims_memory_but_changes_no_decision() -> None:
    clock = ManualClock()
    worker = worker_of(
        {"monitor"}, clock, idle_loop_ttl_s=1.5, expiry_sweep_interval_s=0.2, max_clock_skew_s=5
    )
    idle, old = two_loops_on_one_partition()
    t1 = clock.time()
    worker.publish(old, "search", occurred_at=t1 - 3)
    first = worker.publish(idle, "search", occurred_at=t1 + 1)
    second = worker.publish(idle, "search", occurred_at=t1 + 1)
    worker.run()
    # wall time passes, longer than the TTL: the partition is quiet, but every loop is
    # within ttl + grace (6.5 s) of its newest event, so none is reclaimed
    assert worker.advance(3.0) == []
    third = worker.publish(idle, "search", occurred_at=t1 + 1)
    worker.run()
    # in event time the loop never paused: the third "search" in a row is a spin
    assert [w.event_ids for w in spins(worker)] == [[first, second, third]]
    assert worker.state("monitor", old) is not None
    reclaimed = worker.advance(5.0)  # past ttl + grace on the wall clock
    assert old.encode() in reclaimed
    assert worker.state("monitor", old) is None


def test_an_event_dated_a_year_ahead_does_not_expire_its_neighbours() -> None:
    worker = worker_of({"monitor"}, idle_loop_ttl_s=900, expiry_sweep_interval_s=0.05)
    steady, skewed = two_loops_on_one_partition()
    now = time.time()
    year = 365 * 86400
    worker.publish(steady, "search", occurred_at=now)
    worker.publish(steady, "search", occurred_at=now + 1)
    for i in range(3):
        worker.publish(skewed, "think", occurred_at=now + year + i)
    worker.run()
    assert [w.loop_id for w in spins(worker)] == [skewed]
    worker.advance(0.2)
    worker.publish(skewed, "write", occurred_at=now + year + 3)
    third = worker.publish(steady, "search", occurred_at=now + 2)
    worker.run()
    assert [(w.loop_id, w.trigger_event_id, w.consecutive_count) for w in spins(worker)[1:]] == [
        (steady, third, 3)
    ]


def test_a_record_on_the_wrong_partition_is_rerouted_to_its_loops_state() -> None:
    worker = worker_of({"monitor"})
    home = default_partition(b"loop-r", PARTITIONS)
    wrong_key = next(
        k
        for k in (f"k{i}".encode() for i in range(100))
        if default_partition(k, PARTITIONS) != home
    )
    ids = [worker.publish("loop-r", "search", params={"q": "x"}) for _ in range(2)]
    stray = make_action_event("loop-r", "search", params={"q": "x"})
    # a producer that keyed it wrong: read on another partition, where loop-r has no state
    worker.send(worker.settings.topics.actions, encode_event(stray), wrong_key)
    worker.run()
    (moved,) = worker.topics.records(worker.settings.topics.actions_reroute)
    assert (moved.partition, moved.key) == (home, b"loop-r")
    assert dict(moved.headers)["lw.origin"]  # where it was read travels with it
    # applied with the loop's state on its home partition: the third "search" in a row
    assert [w.event_ids for w in spins(worker)] == [[*ids, stray.event_id]]


def test_malformed_invalid_and_oversized_events_are_dead_lettered() -> None:
    worker = worker_of({"monitor"}, max_event_bytes=4096)
    actions = worker.settings.topics.actions
    oversized = codec.dumps(
        {
            "event_id": "big",
            "loop_id": "x",
            "occurred_at": 1,
            "payload": {"action_type": "a", "params": {"blob": "x" * 5000}},
        }
    )
    bad_inputs = {
        "decode": b"{this is not json",
        "validation": codec.dumps(
            {"event_id": "v", "loop_id": "x", "occurred_at": 1, "payload": {"params": {}}}
        ),
        "too_large": oversized,
    }
    positions = {}
    for reason, value in bad_inputs.items():
        sent = worker.send(actions, value, b"bad-key")
        positions[reason] = (sent.partition, sent.offset)
    ids = [worker.publish("after-bad", "search") for _ in range(3)]
    worker.run()
    by_reason = {letter.reason: letter for letter in worker.dead_lettered()}
    assert set(by_reason) == set(bad_inputs)
    for reason, letter in by_reason.items():
        assert letter.value == bad_inputs[reason]  # the original bytes, unchanged
        assert letter.key == b"bad-key"
        assert (letter.source.partition, letter.source.offset) == positions[reason]
        assert letter.source.topic == actions
    assert by_reason["validation"].message == "payload.action_type: Field required"
    assert "limits.max_event_bytes is 4096" in by_reason["too_large"].message
    assert by_reason["decode"].message.startswith("not valid JSON")
    # the worker went on: the spin after the bad input is warned
    assert [(w.event_ids, w.consecutive_count) for w in spins(worker)] == [(ids, 3)]


def test_a_bad_element_in_a_batch_is_dead_lettered_alone() -> None:
    worker = worker_of({"monitor"})
    loop_id = "batch-1"
    good = [
        {
            "event_id": f"{loop_id}-{i}",
            "loop_id": loop_id,
            "occurred_at": 10 + i,
            "payload": {"action_type": "same"},
        }
        for i in range(3)
    ]
    batch = codec.dumps([good[0], {"event_id": "broken", "loop_id": loop_id}, *good[1:]])
    worker.send(worker.settings.topics.actions, batch, loop_id.encode())
    worker.run()
    (letter,) = worker.dead_lettered()
    (warning,) = spins(worker)
    assert letter.batch_index == 1
    assert codec.loads(letter.value) == {"event_id": "broken", "loop_id": loop_id}
    assert warning.event_ids == [e["event_id"] for e in good]


def test_the_guardrails_decide_a_familys_reruns_from_completions() -> None:
    worker = worker_of({"guardrails"})
    worker.complete_loop("fam-1", 0.2, 0.9, max_reruns=2)
    worker.run()
    (decision,) = worker.output("decisions")
    assert decision["loop_id"] == "fam-1"
    (record,) = worker.topics.records(worker.settings.topics.decisions)
    assert record.key == b"fam-1"  # keyed by family


def test_the_monitor_and_the_fleet_answer_each_event_with_one_verdict_each() -> None:
    worker = worker_of({"monitor", "fleet"})
    event_id = worker.publish("loop-v", "search", params={"q": "x"})
    worker.run()
    verdicts = [v for v in worker.output("verdicts") if event_id in v["answers"]]
    assert sorted(v["role"] for v in verdicts) == ["fleet", "monitor"]
    assert all(
        v["roles"] == ["fleet", "monitor"] and v["answers"] == {event_id: 0} for v in verdicts
    )


def test_roles_that_cannot_run_in_memory_are_named() -> None:
    with pytest.raises(ValueError, match="experience cannot run in memory"):
        worker_of({"monitor", "experience"})


def test_the_clock_does_not_go_back() -> None:
    with pytest.raises(ValueError, match="does not go back"):
        ManualClock().advance(-1)
