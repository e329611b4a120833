"""Contract tests: each Faust/aiokafka workaround is still wired where the library calls it.

An upgrade that renames a hook or stops calling it would leave a subclass's
override silently dead; these tests fail instead. The broker-side behaviour of
each workaround is asserted in ``tests/integration/test_workarounds.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging

import faust
from aiokafka import AIOKafkaConsumer
from faust.tables.recovery import Recovery
from faust.transport import consumer as faust_consumer
from faust.transport.drivers import aiokafka as faust_aiokafka
from faust.web import base as faust_web

from loopwarden.agents.capabilities import STATE_TABLES
from loopwarden.settings import Settings
from loopwarden.streams.runtime import workarounds
from loopwarden.streams.tools.topics import changelog_topics
from loopwarden.worker import build_worker_app


def test_the_worker_app_uses_the_tuned_consumer_and_producer():
    app = build_worker_app(Settings())
    assert isinstance(app.consumer, workarounds._TunedConsumer)
    assert isinstance(app.consumer._thread, workarounds._TunedConsumerThread)
    assert isinstance(app.producer, workarounds._SinkFlushingProducer)


def test_overridden_hooks_exist_in_faust_and_are_called():
    base = faust_aiokafka.AIOKafkaConsumerThread
    for hook in ("_highwaters", "_create_worker_consumer"):
        assert hook in vars(base), f"faust no longer defines {hook}"
    assert "_new_consumer_thread" in vars(faust_aiokafka.Consumer)
    # the worker consumer is built through the hook, and recovery asks for highwaters
    assert "_create_worker_consumer(" in inspect.getsource(base._create_consumer)
    assert "highwaters(" in inspect.getsource(Recovery)


def test_aiokafka_builds_its_fetcher_from_the_patched_attribute():
    source = inspect.getsource(AIOKafkaConsumer.start)
    assert "fetch_max_wait_ms=self._fetch_max_wait_ms" in source
    assert "fetcher_timeout=self._consumer_timeout" in source


async def test_the_worker_consumer_is_built_with_the_long_fetch_routine_timeout():
    from loopwarden.streams.client.fetch_wait import ROUTINE_TIMEOUT_MS

    app = build_worker_app(Settings())
    consumer = app.consumer._thread._create_worker_consumer(app.transport)
    assert consumer._consumer_timeout == ROUTINE_TIMEOUT_MS / 1000 != 0.2  # aiokafka's


async def test_the_livelock_check_visits_every_partition_without_a_task_each():
    """Faust's livelock detector calls ``verify_all_partitions_active``, whose own
    version made and cancelled a task per partition (``Service.sleep(0)``)."""
    detector = inspect.getsource(faust_consumer.Consumer._commit_livelock_detector.fun)
    assert "self.verify_all_partitions_active()" in detector
    faust_check = inspect.getsource(faust_consumer.Consumer.verify_all_partitions_active)
    assert "self.sleep(0)" in faust_check
    app = build_worker_app(Settings())
    consumer = app.consumer
    partitions = {("actions", p) for p in range(80)}
    visited: list[object] = []
    tasks_made: list[object] = []
    loop = asyncio.get_running_loop()
    make_task = loop.create_task

    def counted(*args: object, **kwargs: object) -> object:
        tasks_made.append(args)
        return make_task(*args, **kwargs)

    consumer.assignment = lambda: partitions
    consumer.verify_event_path = lambda now, tp: visited.append(tp)
    loop.create_task = counted  # type: ignore[method-assign]
    try:
        await consumer.verify_all_partitions_active()
    finally:
        loop.create_task = make_task  # type: ignore[method-assign]
    assert sorted(visited) == sorted(partitions)
    assert tasks_made == []


def test_faust_flushes_the_producer_before_committing():
    source = inspect.getsource(faust_consumer.Consumer._commit_offsets)
    flush = source.index("self.app.producer.flush()")
    assert flush < source.index("self._commit(")


def test_faust_router_and_table_pages_are_switched_off():
    assert faust_web.BLUEPRINT_FLAGS["faust.web.apps.router:blueprint"] == "web_router_enabled"
    assert faust_web.BLUEPRINT_FLAGS["faust.web.apps.tables.blueprint"] == "web_tables_enabled"
    app = build_worker_app(Settings(web_port=6066, api={"token": "t"}))
    assert app.conf.web_router_enabled is False and app.conf.web_tables_enabled is False


def test_table_store_writes_where_faust_reads_and_changelogs_are_named_as_created():
    settings = Settings()
    app = build_worker_app(settings)
    names = {table.changelog_topic.get_topic_name() for table in app.tables.values()}
    assert names == set(changelog_topics(settings, STATE_TABLES))
    table = app.tables["loop-state"]
    table.data[b"k"] = b"v"  # what TableStore.put does
    assert table.get(b"k") == b"v" and list(table.keys()) == [b"k"]


async def test_the_keys_of_a_partition_that_moved_away_leave_the_store_after_recovery():
    """Issue 72.1: keys the worker wrote itself stayed in the table after their
    partition moved to another worker (Faust indexed only the keys it read from the
    changelog), so one the other worker deleted came back with the partition."""
    from faust.types import TP

    from loopwarden.streams.runtime.table_store import TableStore

    app = build_worker_app(Settings())
    table = app.tables["loop-state"]
    store = TableStore(table, app.sink)
    store.put(b"kept", b"1", partition=0)
    store.put(b"moved", b"2", partition=1)
    store.put(b"ended", b"3", partition=0)
    store.delete(b"ended", partition=0)
    changelog = table.changelog_topic.get_topic_name()

    await table.data.on_recovery_completed({TP(changelog, 0)}, set())  # Faust's own

    assert sorted(store.keys()) == [b"kept"]
    assert table.data._key_partition == {b"kept": 0}


def test_faust_yields_fetched_batches_through_the_overridden_hooks():
    """The stale-fetch guard needs: the thread fetches through ``_fetch_records``, the
    consumer gets batches through ``_wait_next_records`` inside ``getmany``, and the
    fetcher's drain loop iterates ``getmany``."""
    thread_getmany = inspect.getsource(faust_aiokafka.AIOKafkaConsumerThread.getmany)
    assert "self._fetch_records" in thread_getmany
    assert "_fetch_records" in vars(faust_aiokafka.AIOKafkaConsumerThread)
    assert "self._wait_next_records(" in inspect.getsource(faust_consumer.Consumer.getmany)
    assert "self.getmany" in inspect.getsource(faust_consumer.Consumer._drain_messages)


def test_an_ack_from_an_earlier_generation_does_not_move_the_commit():
    """Issue 15.8: a record received before a rebalance and skipped after it was acked
    into the new generation's bookkeeping, so the commit passed it before the
    re-fetched record was processed (a kill then lost it)."""
    from faust.types import TP
    from faust.types.tuples import Message

    settings = Settings()
    app = build_worker_app(settings)
    consumer = app.consumer
    tp = TP(settings.topics.actions, 0)
    app.topics._acking_topics.add(tp.topic)  # as the conductor does when it subscribes
    app.flow_control.resume()  # as after recovery
    app.consumer_generation_id = 6
    consumer._committed_offset[tp] = 10

    def message(offset: int, generation: int) -> Message:
        msg = Message(tp.topic, 0, offset, 0.0, 0, None, b"k", b"v", None, None, tp=tp)
        msg.generation_id = generation
        consumer._unacked_messages.add(msg)
        return msg

    stale, current = message(12, generation=5), message(10, generation=6)
    assert consumer.ack(stale) is False
    assert stale.acked and stale not in consumer._unacked_messages
    assert consumer.ack(current) is True
    assert consumer._acked[tp] == [10]


def test_an_ack_during_a_rebalance_does_not_move_the_commit():
    """Issue 15.8: records a stream read while the flow was suspended were skipped and
    acked; the revocation commit passed them and the next owner never read them."""
    from faust.types import TP
    from faust.types.tuples import Message

    settings = Settings()
    app = build_worker_app(settings)
    consumer = app.consumer
    tp = TP(settings.topics.memory_writes, 0)
    app.topics._acking_topics.add(tp.topic)
    app.consumer_generation_id = 3
    consumer._committed_offset[tp] = 0
    skipped = Message(tp.topic, 0, 0, 0.0, 0, None, b"k", b"v", None, None, tp=tp)
    skipped.generation_id = 3
    app.flow_control.suspend()  # what Faust does when a rebalance starts
    assert consumer.ack(skipped) is False and skipped.acked
    app.flow_control.resume()
    processed = Message(tp.topic, 0, 0, 0.0, 0, None, b"k", b"v", None, None, tp=tp)
    processed.generation_id = 3
    assert consumer.ack(processed) is True
    assert consumer._acked[tp] == [0]


def test_stream_buffers_keep_their_records_when_the_flow_resumes():
    """Issue 15.8: Faust cleared the stream buffers on the resume that follows the seek
    ending a rebalance; records fetched after the seek were lost (a loop one event
    behind, e.g. offset 97 processed after 95)."""

    from faust.streams import Stream

    app = build_worker_app(Settings())
    assert "clear_on_resume=True" in inspect.getsource(Stream.__init__)  # what Faust asks
    stream_buffer = app.FlowControlQueue(maxsize=10, clear_on_resume=True)
    changelog_buffer = app.tables.changelog_queue
    app.flow_control.suspend()
    stream_buffer.put_nowait("record fetched after the seek")
    changelog_buffer.put_nowait("changelog record of an aborted recovery")
    app.flow_control.resume()
    assert stream_buffer.qsize() == 1
    assert changelog_buffer.qsize() == 0  # recovery's buffer is still cleared


def test_acks_of_one_offset_twice_are_deduplicated_before_the_commit():
    """A record handed over twice around the start-up seek was acked twice; Faust's
    commit then advanced one offset per interval."""
    from faust.types import TP

    assert "_new_offset" in vars(faust_consumer.Consumer)  # the hook overridden
    assert "self._new_offset(" in inspect.getsource(faust_consumer.Consumer)
    settings = Settings()
    consumer = build_worker_app(settings).consumer
    tp = TP(settings.topics.actions, 0)
    consumer._committed_offset[tp] = 10
    consumer._acked[tp] = [10, 11, 11, 12]
    assert consumer._new_offset(tp) == 13  # Faust alone: 12, one offset short
    assert consumer._acked[tp] == []


def test_the_monitor_sensor_is_removed():
    from faust.sensors.monitor import Monitor

    assert "monitor" in dir(faust.App)  # the attribute without_monitor removes
    app = build_worker_app(Settings())
    app.on_init_dependencies()
    assert not any(isinstance(sensor, Monitor) for sensor in app.sensors)


def test_the_producer_faust_flushes_is_reached_through_ensure_producer():
    assert "_ensure_producer" in vars(faust_aiokafka.Producer)
    params = inspect.signature(faust_aiokafka.Producer._ensure_producer).parameters
    assert list(params) == ["self"]
    # it hands out the producer Faust's flush flushes (before every commit)
    assert "return self._producer" in inspect.getsource(faust_aiokafka.Producer._ensure_producer)
    assert "await self._producer.flush()" in inspect.getsource(faust_aiokafka.Producer.flush)


def test_the_private_offsets_read_are_where_faust_keeps_them():
    from faust.types import TP

    settings = Settings()
    consumer = build_worker_app(settings).consumer
    tp = TP(settings.topics.actions, 1)
    consumer._read_offset[tp] = 7
    consumer._committed_offset[tp] = 5
    consumer._acked[tp] = [5, 6]
    assert workarounds.partition_offsets(consumer, tp) == workarounds.PartitionOffsets(7, 5, [5, 6])
    state = workarounds.consumer_state(consumer)
    assert (state.paused, state.buffered, state.unacked) == ([], 0, 0)
    # the names Faust's own commit reads: a rename there would fail here first
    commit = inspect.getsource(faust_consumer.Consumer)
    for name in ("_read_offset", "_committed_offset", "_acked", "_unacked_messages"):
        assert f"self.{name}" in commit, name


def test_the_bounded_take_uses_the_stream_internals_faust_take_uses():
    from faust.streams import Stream

    take = inspect.getsource(Stream.take_events)
    for name in ("_active_agens", "_enable_passive(", "add_processor(", "enable_acks"):
        assert name in inspect.getsource(Stream), name
    assert "self._enable_passive(" in take and "self.enable_acks = False" in take
    assert "self._processors.remove(" in take


def test_aiokafka_builds_each_fetch_from_the_wait_the_fetcher_holds_then():
    """fetch_wait_follows_traffic changes ``Fetcher._fetch_max_wait_ms`` between fetches
    and wraps ``_proc_fetch_request``, whose result says whether records came back."""
    from aiokafka.consumer.fetcher import Fetcher

    actions = inspect.getsource(Fetcher._get_actions_per_node)
    assert "self._fetch_max_wait_ms," in actions  # read when each request is built
    assert "self._proc_fetch_request(" in inspect.getsource(Fetcher._fetch_requests_routine)
    process = inspect.getsource(Fetcher._proc_fetch_request)
    assert "needs_wakeup = True" in process and "return needs_wakeup" in process


async def test_the_fetch_wait_doubles_on_empty_fetches_and_resets_on_records():
    class Fetcher:  # the two attributes the workaround uses, scripted
        def __init__(self, answers: list[bool]) -> None:
            self._fetch_max_wait_ms = 10
            self.answers = answers

        async def _proc_fetch_request(self, assignment, node_id, request) -> bool:
            return self.answers.pop(0)

    fetcher = Fetcher([False, False, False, False, False, True, False])
    workarounds.fetch_wait_follows_traffic(fetcher, busy_ms=10, idle_ms=100)
    waits = []
    for _ in range(7):
        await fetcher._proc_fetch_request(None, 0, None)
        waits.append(fetcher._fetch_max_wait_ms)
    assert waits == [20, 40, 80, 100, 100, 10, 20]
    unchanged = Fetcher([False])
    workarounds.fetch_wait_follows_traffic(unchanged, busy_ms=10, idle_ms=10)  # off
    await unchanged._proc_fetch_request(None, 0, None)
    assert unchanged._fetch_max_wait_ms == 10


class _Message:
    def __init__(self, value: bytes) -> None:
        self.value = value


class _Event:
    def __init__(self, value: bytes) -> None:
        self.value, self.message = value, _Message(value)


class _ScriptedStream:
    """The stream members the bounded take uses, driven by the test as Faust drives a
    stream: each fed value becomes the current event and goes through the processors."""

    def __init__(self) -> None:
        self.enable_acks = True
        self.should_stop = False
        self.loop = asyncio.get_running_loop()
        self.current_event: _Event | None = None
        self.channel = self
        self._processors: list = []
        self._active_agens: set = set()
        self.log = logging.getLogger("test")
        self.timeouts: list[float | None] = []  # every wait the take asked for
        self.acked: list[bytes] = []

    def __aiter__(self):
        return self

    async def __anext__(self):  # the take never iterates it here (no passive driver)
        raise StopAsyncIteration

    def add_processor(self, processor) -> None:
        self._processors.append(processor)

    def _enable_passive(self, iterator) -> None:
        pass

    async def wait_for_stopped(self, *events, timeout=None) -> None:
        self.timeouts.append(timeout)
        waits = [asyncio.ensure_future(event.wait()) for event in events]
        _, pending = await asyncio.wait(waits, timeout=timeout, return_when="FIRST_COMPLETED")
        for wait in pending:
            wait.cancel()

    async def wait(self, event) -> None:
        await event.wait()

    async def ack(self, event: _Event) -> None:
        self.acked.append(event.value)

    async def feed(self, value: bytes) -> None:
        self.current_event = _Event(value)
        for processor in self._processors:
            await processor(value)


async def test_an_idle_take_waits_for_its_first_event_without_a_timer():
    """Faust's take woke every `within` seconds with nothing buffered (50 times a second
    for the experience role's 20 ms); an empty buffer now waits for its first event."""
    stream = _ScriptedStream()
    batches = workarounds.take_events_bounded(stream, 10, 1 << 20, within=0.01)
    first = asyncio.ensure_future(anext(batches))
    done, _ = await asyncio.wait([first], timeout=0.2)  # twenty `within`s of nothing
    assert not done
    assert stream.timeouts == [None]  # one wait, no timer ticks
    await stream.feed(b"a")
    await stream.feed(b"bb")
    assert [e.value for e in await first] == [b"a", b"bb"]  # within 10 ms of the first
    assert stream.timeouts == [None, 0.01]
    second = asyncio.ensure_future(anext(batches))
    await asyncio.wait([second], timeout=0.05)
    assert stream.acked == [b"a", b"bb"]  # acked once the batch was processed
    assert stream.timeouts[2:] == [None]  # empty again: waiting without a timer
    second.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await second


def test_faust_resumes_the_input_partitions_before_it_seeks_them():
    """Why the seek workaround exists: on_recovery_completed resumes the input
    partitions, then seeks them to their committed offsets. Between the two the worker
    fetched from wherever aiokafka stood: the end of the log when records fetched
    during the rebalance had been dropped (the crash scenario lost 193 warnings)."""
    source = inspect.getsource(Recovery.on_recovery_completed)
    assert source.index("consumer.resume_partitions(") < source.index("consumer.perform_seek()")
    assert "self.seek_to_committed()" in inspect.getsource(faust_consumer.Consumer.perform_seek)
    assert "def on_partitions_assigned" in inspect.getsource(faust_consumer.Consumer)


def _assigned_consumer() -> tuple[object, object, object]:
    from faust.types import TP

    settings = Settings()
    consumer = build_worker_app(settings).consumer
    actions = TP(settings.topics.actions, 0)
    changelog = TP(changelog_topics(settings, STATE_TABLES)[0], 0)
    consumer._seek_gate.assigned({actions})  # as on_partitions_assigned leaves it
    consumer._active_partitions = set()
    return consumer, actions, changelog


def test_an_input_partition_is_resumed_only_once_it_stands_at_its_committed_offset():
    consumer, actions, changelog = _assigned_consumer()
    consumer.resume_partitions({actions, changelog})
    assert consumer._active_partitions == {changelog}  # recovery's changelog reads go on


class _ThreadSeeks:
    """The consumer thread's seeks, recorded (the broker side is in the fault suite)."""

    def __init__(self, committed: dict) -> None:
        self.committed = committed
        self.calls: list[tuple[str, object]] = []

    async def seek_to_committed(self) -> dict:
        self.calls.append(("seek_to_committed", None))
        return self.committed

    async def seek_wait(self, partitions: dict) -> None:
        self.calls.append(("seek_wait", dict(partitions)))


def test_the_seek_moves_an_input_partition_without_commit_to_its_beginning_then_resumes_it():
    from faust.types import TP

    consumer, actions, changelog = _assigned_consumer()
    never_committed = TP(actions.topic, 1)
    consumer._seek_gate.held.add(never_committed)
    thread = _ThreadSeeks({actions: 84, never_committed: None, changelog: None})
    consumer._thread = thread
    consumer.assignment = lambda: {actions, never_committed, changelog}
    consumer.resume_partitions({actions, never_committed})
    assert consumer._active_partitions == set()

    committed = asyncio.run(consumer.seek_to_committed())

    assert committed[actions] == 84
    # aiokafka seeks only committed partitions; the other one goes back to its start
    # (the changelog's position is recovery's)
    assert thread.calls == [("seek_to_committed", None), ("seek_wait", {never_committed: 0})]
    assert consumer._active_partitions == {actions, never_committed}
    assert consumer._seek_gate.held == set()


def test_records_fetched_before_the_seek_to_their_commit_are_dropped():
    consumer, actions, _ = _assigned_consumer()
    assert "if self._seek_gate.holds(tp)" in inspect.getsource(type(consumer).getmany)
    assert consumer._seek_gate.holds(actions)


class _SeekInterruptedByARebalance(_ThreadSeeks):
    """A seek during which the group rebalances again (a second worker joins a moment
    after the first): the consumer gets its next assignment before the seek answers."""

    def __init__(self, consumer: object, committed: dict, next_inputs: set) -> None:
        super().__init__(committed)
        self.consumer = consumer
        self.next_inputs = next_inputs

    async def seek_to_committed(self) -> dict:
        self.consumer._seek_gate.assigned(self.next_inputs)  # as on_partitions_assigned
        return await super().seek_to_committed()


def test_a_seek_that_ends_after_a_newer_assignment_resumes_nothing():
    """Issue 72: the older seek used to release the newer assignment's partitions while
    that assignment's tables were still recovering (loops counted from one again)."""
    from faust.types import TP

    consumer, actions, changelog = _assigned_consumer()
    moved_in = TP(actions.topic, 1)
    consumer._thread = _SeekInterruptedByARebalance(
        consumer, {actions: 84, changelog: None}, next_inputs={actions, moved_in}
    )
    consumer.assignment = lambda: {actions, moved_in, changelog}

    asyncio.run(consumer.seek_to_committed())

    assert consumer._active_partitions == set()  # nothing read before the new recovery
    assert consumer._seek_gate.holds(actions) and consumer._seek_gate.holds(moved_in)
    assert consumer._seek_gate.stale_seeks == 1
    consumer._thread = _ThreadSeeks({actions: 84, moved_in: 10, changelog: None})
    asyncio.run(consumer.seek_to_committed())  # the new assignment's own seek, after recovery
    assert consumer._active_partitions == {actions, moved_in}


def test_faust_seeks_from_its_fetch_loop_while_the_flow_is_stopped():
    """Why a seek begun with the flow stopped must not release: Faust's getmany seeks
    to the committed offsets whenever it finds the flow stopped, which it is from a
    rebalance's start until its recovery reads the changelogs."""
    source = inspect.getsource(faust_consumer.Consumer.getmany)
    assert "getmany called while flow not active" in source
    assert "await self.perform_seek()" in source
    ended = inspect.getsource(Recovery.on_recovery_completed)
    # the seek that ends a recovery: the flow was resumed for the changelog reads
    assert ended.index("consumer.perform_seek()") < ended.index("consumer.resume_flow()")


def test_a_seek_begun_while_the_flow_is_stopped_releases_nothing():
    """Issue 72.1: the fetch loop's seek released the partitions of a new assignment
    while its recovery still read their changelog; a worker given a partition back
    applied its records to an empty table (every loop there counted from one again)."""
    consumer, actions, changelog = _assigned_consumer()
    consumer._thread = _ThreadSeeks({actions: 84, changelog: None})
    consumer.assignment = lambda: {actions, changelog}
    consumer.flow_active = False  # a rebalance under way: Faust's getmany seeks now

    asyncio.run(consumer.seek_to_committed())

    assert consumer._active_partitions == set() and consumer._seek_gate.holds(actions)
    assert consumer._seek_gate.early_seeks == 1
    consumer.flow_active = True  # the recovery read the changelogs: its own seek
    asyncio.run(consumer.seek_to_committed())
    assert consumer._active_partitions == {actions}
