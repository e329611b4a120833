"""Every Faust/aiokafka workaround loopwarden needs, in one place, each with a contract test.

``tests/unit/test_workarounds.py`` and ``tests/integration/test_workarounds.py``
assert that each is still in effect, so an upgrade that silently disables one
(a renamed hook, a changed call, a private attribute gone) fails a test instead
of a deployment. Nothing outside this package touches a private name of Faust,
mode or aiokafka.

In :mod:`.consumer` (the worker's consumer, producer and transport):

- **fetch wait**: faust hard-codes the consumer's ``fetch_max_wait_ms`` to 1500 ms
  in its aiokafka driver, and Tansu parks every fetch for the full wait, so each
  consume hop would cost up to 1.5 s. The worker consumer gets
  ``kafka.fetch_max_wait_ms`` (10 ms) through the attribute aiokafka reads when it
  builds its fetcher.
- **fetch wait that follows the traffic** (:func:`fetch_wait_follows_traffic`): a
  short wait keeps warnings fast, but an idle worker then fetches 100 times a second
  (7.7 % of a core, and a quarter of the embedded broker's); after each fetch the
  wait doubles while fetches come back empty, up to ``kafka.idle_fetch_max_wait_ms``,
  and drops back as soon as records arrive (aiokafka's ``Fetcher`` reads
  ``_fetch_max_wait_ms`` for each request it builds).
- **fetch routine wake-ups**: aiokafka's fetch routine also wakes every
  ``consumer_timeout_ms`` (200 ms) when nothing else woke it; the worker consumer gets
  :data:`~loopwarden.streams.client.fetch_wait.ROUTINE_TIMEOUT_MS` (1 s) through the
  attribute aiokafka reads when it builds its fetcher, as the client's subscribers do
  through the constructor.
- **livelock check without a task per partition**: every 2.5 commit intervals Faust
  checks each assigned partition's progress, calling ``Service.sleep(0)`` before each,
  which makes and cancels a task; with about 80 partitions that was a third of an idle
  worker's event-loop callbacks. The check yields with ``asyncio.sleep(0)`` instead.
- **end-offset probe**: table recovery reads the changelog up to each partition's
  end offset, which Tansu under-reports (see :mod:`loopwarden.streams.client.offsets`);
  with ``kafka.probe_end_offsets`` (default on) the true end is probed first.
- **stale fetches after a seek**: Faust hands a fetched batch from the consumer
  thread to the event loop and yields it record by record; a rebalance or seek
  in between (kills during start-up make one a second after the first join)
  rewinds aiokafka to the committed offsets, yet Faust keeps yielding the old
  batch under the new generation. Its records then arrive ahead of the rewound
  ones: Faust's read offset jumps past records it then drops as already read
  (never processed, never acked: the commit stalls, or a recorded gap commits
  past them), and its acked list gets duplicates (commits crawl one offset per
  interval). Loop states skipped those events as replays and went backwards.
  The consumer thread now notes each partition's position when it hands a batch
  over, and the consumer stops yielding a batch whose partition was reassigned
  or moved since: aiokafka re-fetches from the new position.
- **no fetch behind Faust's back** (:meth:`_TunedConsumerThread._fetch_records`):
  Faust hands the consumer thread its live set of active partitions and keeps
  editing it (a rebalance pauses every partition) while the thread fetches; aiokafka
  reads an empty set as "every partition". The fetch then returned the paused input
  partitions' records up to the end of the log, Faust dropped them, and their
  positions stayed there. The thread now fetches for a copy of the set, and for
  nothing when it is empty.
- **input partitions read only from their committed offsets**: after a rebalance
  Faust resumes the input partitions *before* it seeks them to their committed
  offsets, and aiokafka seeks only partitions that have a commit: a position moved
  as above was read from first (the newest records, after which the seek rewound
  the worker and the loop states skipped the older ones as replays), or, with no
  commit yet, never rewound at all (193 warnings lost in one crash run). The input
  partitions of a new assignment are now resumed only once they stand at their
  committed offset (or at their beginning when they have none), and records
  fetched for them before that are dropped.
- **acks of skipped records**: a stream skips the records it reads while a
  rebalance is under way (flow suspended) or that belong to an earlier
  generation, and Faust acks them anyway ("otherwise the lag would increase").
  The revocation commit then passed records nobody processed, and the worker
  that got the partition back started after them: a loop's state missed an event
  (iteration one behind), and a memory agent's buffered batch (95 writes) was
  never applied. Acks that arrive while the flow is suspended, or for an
  earlier generation, now only mark the message done: its offset is not
  committed, so the record is read again (a replay is idempotent). This is Faust's
  pure-Python stream path (``NO_CYTHON``); its compiled path does not acknowledge a
  skipped record at all, and acknowledges processed ones inline without
  ``Consumer.ack`` (hence the ``BundleAcks`` sensor below).
- **stream buffers kept on resume** (``LoopwardenApp.FlowControlQueue``): Faust
  empties every stream buffer when the flow resumes, also right after the seek
  that ends a rebalance, so records already fetched from the new position were
  lost while the consumer had read past them (a loop one event behind, a commit
  stuck behind the gap). Only table recovery's changelog buffer is still cleared.
- **duplicate acks**: a record handed over twice (around the start-up seek) was
  acknowledged twice, and Faust's commit then advanced one offset per interval;
  the acknowledged offsets are de-duplicated before each commit.
- **record bundles** (:mod:`loopwarden.streams.runtime.bundles`): the consumer hands each
  fetched run of a bundled topic's partition to the agent as one message, and
  keeps a bundle's offsets out of Faust's gap bookkeeping (they are acknowledged
  with the bundle by the ``BundleAcks`` sensor). Contract test:
  ``tests/integration/test_bundles.py``.
- **sink flush before commits**: Faust flushes its producer before every offset
  commit; the worker's producer delivers the :class:`~.sink.RecordSink` first,
  retrying until it succeeds (raising there would crash the commit task).

In :mod:`.bounded_take`:

- **batches bounded by bytes**: Faust's ``Stream.take_events`` sizes a batch in
  records only; :func:`take_events_bounded` follows its body (buffering
  processor, passive consumption, acks after the batch) with a byte budget too,
  on the stream's private ``_active_agens``, ``_enable_passive`` and
  ``_processors``.

In :mod:`.private_reads` (reads of private state, each behind one function):

- **the aiokafka producer** (:func:`aiokafka_producer`): the sink, the broker
  watchdog and the guardrails API use the producer Faust flushes before commits,
  reached through ``Producer._ensure_producer``.
- **offsets Faust keeps** (:func:`partition_offsets`, :func:`committed_offset`):
  the lag metric and the
  ``SIGUSR1`` dump read the consumer's ``_committed_offset``, ``_read_offset``
  and ``_acked`` (and, :func:`consumer_state`, its paused and buffered partitions
  and unacked messages).
- **no Monitor sensor** (:func:`without_monitor`): Faust's built-in ``Monitor``
  costs about 40 % of throughput and is removed from the app's sensors.
"""

from loopwarden.streams.runtime.workarounds.bounded_take import take_events_bounded
from loopwarden.streams.runtime.workarounds.consumer import (
    TunedTransport,
    _SinkFlushingProducer,
    _TunedConsumer,
    _TunedConsumerThread,
    fetch_wait_follows_traffic,
)
from loopwarden.streams.runtime.workarounds.private_reads import (
    ConsumerState,
    PartitionOffsets,
    aiokafka_producer,
    committed_offset,
    consumer_state,
    partition_offsets,
    without_monitor,
)

__all__ = [
    "ConsumerState",
    "PartitionOffsets",
    "TunedTransport",
    "_SinkFlushingProducer",
    "_TunedConsumer",
    "_TunedConsumerThread",
    "aiokafka_producer",
    "committed_offset",
    "consumer_state",
    "fetch_wait_follows_traffic",
    "partition_offsets",
    "take_events_bounded",
    "without_monitor",
]
