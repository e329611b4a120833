"""Idle loops: decided in event time by the processors; memory reclaimed per partition."""

from one_record import process_one

from loopwarden.agents.guardrails.declaration import FAMILY_STATES
from loopwarden.agents.guardrails.records import GuardrailProcessor
from loopwarden.agents.monitor.declaration import LOOP_STATES
from loopwarden.agents.monitor.records import RecordProcessor
from loopwarden.schemas import codec
from loopwarden.schemas.dead_letter import SourcePosition
from loopwarden.settings import DetectionSettings
from loopwarden.streams.runtime.state.expiry import IdleLoopSweeper
from loopwarden.streams.runtime.state.offline import OfflineStates

SEED = DetectionSettings(profile="seed")  # these tests use the seed's triggers


def test_only_idle_loops_of_the_swept_partition_expire():
    sweeper = IdleLoopSweeper(ttl_s=100, interval_s=10)
    sweeper.touch(b"old", 0, 1000)
    sweeper.touch(b"fresh", 0, 1150)
    sweeper.touch(b"other-partition", 1, 900)
    keys = [b"old", b"fresh", b"other-partition"]
    assert sweeper.expired(0, keys, lambda k: None) == [b"old"]
    assert sweeper.expired(0, [b"fresh", b"other-partition"], lambda k: None) == []


def test_recovered_loops_are_peeked():
    sweeper = IdleLoopSweeper(ttl_s=100, interval_s=10)
    sweeper.touch(b"new", 0, 5000)
    peeked = {b"recovered": (0, 10.0)}
    assert sweeper.expired(0, [b"new", b"recovered"], peeked.get) == [b"recovered"]


def test_sweeps_are_rate_limited_per_partition():
    sweeper = IdleLoopSweeper(ttl_s=1, interval_s=10)
    assert sweeper.due(0, 100.0)
    assert not sweeper.due(0, 105.0)
    assert sweeper.due(1, 105.0)
    assert sweeper.due(0, 110.0)


def test_a_quiet_partition_reclaims_loops_idle_by_the_wall_clock():
    sweeper = IdleLoopSweeper(ttl_s=10, interval_s=1, grace_s=5)
    sweeper.touch(b"a", 0, 1000)
    sweeper.touch(b"recent", 0, 1014)
    sweeper.touch(b"b", 1, 1000)
    sweeper.record_seen(0, 100.0)
    sweeper.record_seen(1, 105.0)
    assert sweeper.quiet_partitions(109.0) == []
    assert sweeper.quiet_partitions(110.0) == [0]
    assert sweeper.quiet_partitions(111.0) == []  # reported once, until a record comes
    # only loops that any later event would start afresh: last event before now - ttl - grace
    keys = [b"a", b"recent", b"b"]
    assert sweeper.expired(0, keys, lambda k: None, now=1029.0) == [b"a"]
    sweeper.forget_partitions({1})
    assert sweeper.quiet_partitions(200.0) == []


def test_the_stream_sweep_leaves_a_grace_for_late_events():
    sweeper = IdleLoopSweeper(ttl_s=100, interval_s=10, grace_s=50)
    sweeper.touch(b"old", 0, 1000)
    sweeper.touch(b"newest", 0, 1120)
    assert sweeper.expired(0, [b"old", b"newest"], lambda k: None) == []  # 120 < 150
    sweeper.touch(b"newest", 0, 1151)
    assert sweeper.expired(0, [b"old", b"newest"], lambda k: None) == [b"old"]


def _event(loop_id: str, event_id: str, at: float, action_type: str = "search") -> bytes:
    payload = {"action_type": action_type}
    envelope = {"event_id": event_id, "loop_id": loop_id, "occurred_at": at, "payload": payload}
    return codec.dumps(envelope)


def _run(
    processor: RecordProcessor, records: list[bytes], ttl_s: float = float("inf")
) -> list[str]:
    """Apply records one by one, the state only ever read back from its snapshot."""
    stored: dict[str, bytes] = {}
    from loopwarden.agents.monitor.state import LoopState

    def load(loop_id: str) -> LoopState | None:
        data = stored.get(loop_id)
        return LoopState.restore(loop_id, data) if data else None

    warned = []
    for offset, value in enumerate(records):
        source = SourcePosition("t", 0, offset)
        outcome = process_one(processor, LOOP_STATES, value, None, source, load, idle_ttl_s=ttl_s)
        for loop_id, state in outcome.states.items():
            stored[loop_id] = state.snapshot()
        warned += [w["trigger_event_id"] for w in outcome.warnings]
    return warned


def test_a_loop_idle_longer_than_the_ttl_starts_afresh_in_event_time():
    """Expiry used to be a wall-clock sweep: `detect` (no sweep) kept the streak and a
    live worker did not, so the two disagreed for a loop with a gap over the TTL."""
    records = [_event("L", "a", 0.0), _event("L", "b", 1.0)]
    records += [_event("L", "c", 3700.0), _event("L", "d", 3701.0), _event("L", "e", 3702.0)]
    assert _run(RecordProcessor(SEED), records, 3600) == ["e"]  # c, d, e: three in a row
    assert _run(RecordProcessor(SEED), records) == ["c", "d", "e"]  # no TTL: one streak
    # the gap must be *over* the TTL
    records[2:] = [_event("L", "c", 3601.0)]
    assert _run(RecordProcessor(SEED), records, 3600) == ["c"]


def test_a_restarted_loop_still_skips_a_record_it_applied_before_the_gap():
    processor = RecordProcessor(SEED)
    records = [_event("L", "a", 0.0), _event("L", "b", 100.0)]
    stored: dict = {}
    from loopwarden.agents.monitor.state import LoopState

    def load(loop_id):
        return LoopState.restore(loop_id, stored[loop_id]) if loop_id in stored else None

    for offset, value in enumerate(records):
        source = SourcePosition("t", 0, offset)
        out = process_one(processor, LOOP_STATES, value, None, source, load, idle_ttl_s=10)
        stored.update({k: v.snapshot() for k, v in out.states.items()})
    source = SourcePosition("t", 0, 0)
    again = process_one(processor, LOOP_STATES, records[0], None, source, load, idle_ttl_s=10)
    assert again.skipped == 1 and again.events == 0


def test_a_family_idle_past_its_ttl_keeps_its_applied_positions():
    processor = GuardrailProcessor()
    completion = {
        "event_id": "c1",
        "loop_id": "fam",
        "occurred_at": 0.0,
        "type": "loop_complete",
        "payload": {"reflection_status": "done", "alignment_score": 0.2, "drift_score": 0.1},
    }
    later = {**completion, "event_id": "c2", "loop_id": "fam_r1", "occurred_at": 100.0}
    states = OfflineStates(FAMILY_STATES, idle_ttl_s=10)
    states.apply(processor, codec.dumps(completion), None, SourcePosition("t", 0, 0))
    second = states.apply(processor, codec.dumps(later), None, SourcePosition("t", 0, 1))
    # a fresh family: the earlier completion's trace is gone
    assert list(second.states["fam"].traces) == ["fam_r1"]
    again = states.apply(processor, codec.dumps(completion), None, SourcePosition("t", 0, 0))
    assert again.decisions == []


def test_a_sweep_reads_the_tables_keys_once_per_assignment():
    sweeper = IdleLoopSweeper(ttl_s=100, interval_s=10)
    reads = []

    def keys():
        reads.append(1)
        return [b"recovered"]

    sweeper.touch(b"new", 0, 5000)
    peeked = {b"recovered": (0, 10.0)}
    assert sweeper.expired(0, keys, peeked.get) == [b"recovered"]
    sweeper.touch(b"newer", 0, 9000)
    assert sweeper.expired(0, keys, peeked.get) == [b"new"]
    assert len(reads) == 1  # not a scan of every key per sweep
    sweeper.forget_partitions({0})  # handed over and back: its keys are read again
    sweeper.touch(b"newest", 0, 20000)
    sweeper.expired(0, keys, peeked.get)
    assert len(reads) == 2


def test_a_loop_moved_to_another_partition_is_tracked_there_only():
    sweeper = IdleLoopSweeper(ttl_s=100, interval_s=10)
    sweeper.touch(b"loop", 0, 1000)
    sweeper.touch(b"loop", 1, 1000)
    sweeper.touch(b"other", 0, 5000)
    sweeper.touch(b"other1", 1, 5000)
    assert sweeper.expired(0, [], lambda k: None) == []
    assert sweeper.expired(1, [], lambda k: None) == [b"loop"]


def test_a_forgotten_key_is_never_reported_idle():
    sweeper = IdleLoopSweeper(ttl_s=10, interval_s=1)
    sweeper.touch(b"ended", 0, 100)
    sweeper.touch(b"open", 0, 100)
    sweeper.forget(b"ended")  # its state was deleted when its task ended
    assert sweeper.expired(0, [b"open"], lambda k: None, now=1000) == [b"open"]
    sweeper.forget(b"never-seen")  # harmless
