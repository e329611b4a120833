"""The one error policy every agent runs under (streams/runtime/runner.py), without a broker."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

from loopwarden.errors import (
    PublishError,
    StorageUnavailableError,
    TransientError,
    is_retriable,
)
from loopwarden.streams.runtime.backoff import Backoff
from loopwarden.streams.runtime.bundles import RecordBundle
from loopwarden.streams.runtime.dead_letters import DeadLetters, RateLimitedLog
from loopwarden.streams.runtime.runner import AgentRunner, ErrorPolicy


class Buffer:
    """Collects what would be sent (stands in for the sink: no Kafka involved)."""

    def __init__(self):
        self.records = []
        self.full = False

    def add(self, topic, key, value, *, partition=None, headers=()):
        self.records.append((topic, key, value, dict(headers)))


class Stream:
    """An iterable of consumed messages, shaped as Faust's ``stream.events()``."""

    def __init__(self, values):
        self.values = values

    async def events(self):
        for offset, value in enumerate(self.values):
            message = SimpleNamespace(
                value=value,
                key=b"k",
                headers=[],
                topic="in",
                partition=0,
                offset=offset,
                timestamp=None,
            )
            yield SimpleNamespace(message=message)


def runner(policy=ErrorPolicy.DEAD_LETTER):
    sink = Buffer()
    letters = DeadLetters(sink, "dlq")
    return AgentRunner("test", letters, policy=policy, retry=Backoff(0.001, 0.002)), sink


async def test_a_failing_record_is_dead_lettered_and_the_next_is_processed():
    run, sink = runner()
    seen = []

    def handle(record):
        if record.value == b"boom":
            raise ValueError("poison")
        seen.append(record.value)

    await run.run(Stream([b"a", b"boom", b"b"]), handle)
    assert seen == [b"a", b"b"]
    (topic, key, value, headers) = sink.records[0]
    assert (topic, key, value) == ("dlq", b"k", b"boom")
    assert headers["lw.dlq.reason"] == b"processing_error"
    assert headers["lw.dlq.message"] == b"ValueError: poison"
    assert run.failed == 1 and run.processed == 2


async def test_skip_and_raise_policies():
    skip, sink = runner(ErrorPolicy.SKIP)
    await skip.run(Stream([b"x"]), lambda r: 1 / 0)
    assert sink.records == [] and skip.failed == 1
    crash, _ = runner(ErrorPolicy.RAISE)
    with pytest.raises(ZeroDivisionError):
        await crash.run(Stream([b"x"]), lambda r: 1 / 0)


async def test_a_transient_failure_retries_the_same_record_without_rejecting_it():
    run, sink = runner()
    attempts = []

    async def handle(record):
        attempts.append(record.source.offset)
        if len(attempts) < 4:
            raise OSError("disk unavailable")

    await run.run(Stream([b"a"]), handle)
    assert attempts == [0, 0, 0, 0] and run.retries == 3
    assert sink.records == [] and run.processed == 1


def test_retriable_is_read_from_the_exception_never_from_its_text():
    from aiokafka.errors import RequestTimedOutError, TopicAuthorizationFailedError

    assert is_retriable(OSError("x")) and is_retriable(TimeoutError())
    assert is_retriable(TransientError("model down")) and is_retriable(PublishError("x"))
    assert is_retriable(RequestTimedOutError()) and not is_retriable(
        TopicAuthorizationFailedError()
    )
    # LanceDB's texts for an away storage, raised by something that is not at a boundary
    assert not is_retriable(RuntimeError("LanceError(IO): read failed"))
    assert not is_retriable(RuntimeError("lance error: Not found: /m/memories.lance/data/1"))
    assert not is_retriable(ValueError("Permission denied")) and not is_retriable(KeyError("k"))


async def test_a_permanent_error_whose_text_says_not_found_is_dead_lettered_at_once():
    """It used to be retried forever: its text matched a marker of an away storage."""
    run, sink = runner()
    attempts = []

    def handle(record):
        attempts.append(record.source.offset)
        raise RuntimeError("lance error: Not found: the key 'x' in the lookup")

    await run.run(Stream([b"a", b"b"]), handle)
    assert attempts == [0, 1] and run.retries == 0
    reasons = [headers["lw.dlq.reason"] for _, _, _, headers in sink.records]
    assert reasons == [b"processing_error", b"processing_error"]


async def test_a_retriable_error_is_retried_a_bounded_number_of_times_then_dead_lettered():
    sink = Buffer()
    run = AgentRunner("test", DeadLetters(sink, "dlq"), retry=Backoff(0.001, 0.002, 3))
    attempts = []

    def handle(record):
        attempts.append(record.value)
        if record.value == b"stuck":
            raise TimeoutError("the model endpoint did not answer")

    await run.run(Stream([b"stuck", b"next"]), handle)
    assert attempts == [b"stuck"] * 4 + [b"next"]  # the first try and 3 retries
    ((topic, _key, value, headers),) = sink.records
    assert (topic, value, headers["lw.dlq.reason"]) == ("dlq", b"stuck", b"retries_exhausted")
    assert headers["lw.dlq.message"].startswith(b"still failing after 3 retries: TimeoutError")
    assert run.failed == 1 and run.processed == 1 and run.paused is None


async def test_storage_away_pauses_the_record_says_so_and_resumes_without_a_limit(caplog):
    from opentelemetry.metrics import NoOpMeter

    from loopwarden.streams.runtime.telemetry.metrics import WorkerMetrics

    sink = Buffer()
    metrics = WorkerMetrics(NoOpMeter("t"))
    run = AgentRunner(
        "store", DeadLetters(sink, "dlq"), retry=Backoff(0.001, 0.002, 1), metrics=metrics
    )
    seen_while_paused = []

    def handle(record):
        seen_while_paused.append((run.paused, metrics.totals.paused.get("store")))
        if len(seen_while_paused) < 5:  # more attempts than max_retries: no limit
            raise StorageUnavailableError("memory write: storage unavailable: /m is not there")

    with caplog.at_level(logging.WARNING):
        await run.run(Stream([b"a"]), handle)
    assert seen_while_paused[0] == (None, None)
    reasons = [reason for reason, _ in seen_while_paused[1:]]
    assert all("storage unavailable" in r and "in[0]@0" in r for r in reasons), reasons
    assert [m for _, m in seen_while_paused[1:]] == [1, 1, 1, 1]
    assert sink.records == [] and run.processed == 1 and run.failed == 0
    assert run.paused is None and metrics.totals.paused["store"] == 0
    assert "store: paused at in[0]@0: StorageUnavailableError" in caplog.text
    assert "store: resumed after" in caplog.text and "(4 retries)" in caplog.text


def test_retry_backoff_doubles_up_to_its_cap():
    policy = Backoff(0.5, 3.0)
    assert [policy.delay(n) for n in (1, 2, 3, 4, 5)] == [0.5, 1.0, 2.0, 3.0, 3.0]


def test_rate_limited_log_counts_what_it_suppresses(caplog):
    limiter = RateLimitedLog(logging.getLogger("t"), burst=3, window_s=10)
    allowed = [limiter.allow("bad", now=float(i) / 100) for i in range(50)]
    assert allowed.count(True) == 3
    with caplog.at_level(logging.WARNING):
        assert limiter.allow("bad", now=20.0)
    assert "47 more bad line(s) suppressed" in caplog.text


class BundleStream:
    """Faust's ``stream.events()`` yielding one message per bundle of ``values``."""

    def __init__(self, *bundles):
        self.bundles = bundles

    async def events(self):
        offset = 0
        for values in self.bundles:
            records = []
            for value in values:
                records.append(
                    SimpleNamespace(
                        value=value,
                        key=b"k%d" % offset,
                        headers=(),
                        topic="in",
                        partition=0,
                        offset=offset,
                        timestamp=None,
                    )
                )
                offset += 1
            yield SimpleNamespace(message=SimpleNamespace(value=RecordBundle(tuple(records))))


async def test_each_record_of_a_bundle_gets_the_error_policy_and_the_message_ends_once():
    run, sink = runner()
    seen, ends = [], []

    def handle(record):
        if record.value == b"boom":
            raise ValueError("poison")
        seen.append(record.source.offset)

    await run.run(
        BundleStream([b"a", b"boom", b"b"], [b"c"]),
        handle,
        after_message=lambda: ends.append(list(seen)),
    )
    assert seen == [0, 2, 3]
    assert ends == [[0, 2], [0, 2, 3]]  # once per message, after its records
    (topic, key, value, headers) = sink.records[0]
    assert (topic, key, value) == ("dlq", b"k1", b"boom")
    assert headers["lw.dlq.reason"] == b"processing_error"
    assert (run.processed, run.failed, run.messages) == (3, 1, 2)


async def test_metrics_count_the_events_records_held_once_per_message():
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from loopwarden.streams.runtime.telemetry.metrics import WorkerMetrics

    reader = InMemoryMetricReader()
    metrics = WorkerMetrics(MeterProvider(metric_readers=[reader]).get_meter("t"))
    run, _ = runner()
    run.metrics = metrics

    def handle(record):
        if record.value == b"boom":
            raise ValueError("poison")
        return int(record.value)  # the events the record held (a batch)

    await run.run(BundleStream([b"3", b"boom", b"50"], [b"1"]), handle)
    assert metrics.totals.events == {"test": 54}  # the failed record counts nothing
    (durations,) = [
        m.data.data_points[0]
        for r in reader.get_metrics_data().resource_metrics
        for s in r.scope_metrics
        for m in s.metrics
        if m.name == "loopwarden.processing.duration"
    ]
    assert durations.count == 2  # one sample per consumed message (bundle)

    async def store(records):
        if any(r.value == b"boom" for r in records):
            raise ValueError("poison")

    class Batches(Stream):
        async def take_events(self, max_records, within):
            yield [event async for event in self.events()]

    await run.run_batches(Batches([b"a", b"b"]).take_events(10, 0.01), store)
    await run.run_batches(Batches([b"c", b"boom"]).take_events(10, 0.01), store)
    assert metrics.totals.events["test"] == 56  # the failed batch counts nothing


async def test_only_a_failing_record_sends_the_handler_back_not_a_failing_flush():
    """``on_error`` (the monitor drops the states a failed record touched) runs for a
    record's failure only: an output flush retried during an outage touches no state."""
    sink = Buffer()
    reverted, flushes = [], []

    async def flush_when_full():
        flushes.append(1)
        if len(flushes) == 1:
            raise PublishError("broker down")

    run = AgentRunner(
        "test",
        DeadLetters(sink, "dlq"),
        retry=Backoff(0.001, 0.002),
        on_error=lambda: reverted.append(1),
        flush_when_full=flush_when_full,
    )

    def handle(record):
        if record.value == b"bad":
            raise ValueError("bug")

    await run.run(Stream([b"ok", b"bad", b"ok"]), handle)
    assert len(flushes) == 4  # one retried after the outage, then one per message
    assert reverted == [1]  # the bad record alone
    assert run.processed == 2 and run.failed == 1


async def test_the_flush_runs_only_when_the_sink_says_it_is_full():
    flushes, full = [], [False]

    async def flush():
        flushes.append(1)
        full[0] = False

    run = AgentRunner(
        "test", DeadLetters(Buffer(), "dlq"), flush_when_full=flush, is_full=lambda: full[0]
    )

    def handle(record):
        if record.value == b"big":
            full[0] = True

    await run.run(BundleStream([b"a", b"big", b"b"], [b"c"]), handle)
    assert flushes == [1]  # after the record that filled it, not after every record
    assert run.processed == 4
