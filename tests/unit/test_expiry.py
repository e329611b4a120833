"""Idle loops expire by event time, per partition."""

from loopwarden.agents.monitor.expiry import IdleLoopSweeper


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


def test_a_quiet_partition_expires_all_its_loops():
    sweeper = IdleLoopSweeper(ttl_s=10, interval_s=1)
    sweeper.touch(b"a", 0, 1000)
    sweeper.touch(b"b", 1, 1000)
    sweeper.record_seen(0, 100.0)
    sweeper.record_seen(1, 105.0)
    assert sweeper.quiet_partitions(109.0) == []
    assert sweeper.quiet_partitions(110.0) == [0]
    assert sweeper.quiet_partitions(111.0) == []  # reported once, until a record comes
    assert sweeper.expired(0, [b"a", b"b"], lambda k: None, everything=True) == [b"a"]
    sweeper.forget_partitions({1})
    assert sweeper.quiet_partitions(200.0) == []
