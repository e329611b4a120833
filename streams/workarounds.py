"""Every Faust/aiokafka workaround loopwarden needs, in one place, each with a contract test.

``tests/unit/test_workarounds.py`` and ``tests/integration/test_workarounds.py``
assert that each is still in effect, so an upgrade that silently disables one
(a renamed hook, a changed call) fails a test instead of a deployment.

- **fetch wait**: faust hard-codes the consumer's ``fetch_max_wait_ms`` to 1500 ms
  in its aiokafka driver, and Tansu parks every fetch for the full wait, so each
  consume hop would cost up to 1.5 s. The worker consumer gets
  ``kafka.fetch_max_wait_ms`` (10 ms) through the attribute aiokafka reads when it
  builds its fetcher.
- **end-offset probe**: table recovery reads the changelog up to each partition's
  end offset, which Tansu under-reports (see :mod:`loopwarden.streams.offsets`);
  with ``kafka.probe_end_offsets`` (default on) the true end is probed first.
- **sink flush before commits**: Faust flushes its producer before every offset
  commit; the worker's producer delivers the :class:`~.sink.RecordSink` first,
  retrying until it succeeds (raising there would crash the commit task).

These classes expect the app to be a :class:`~loopwarden.streams.app.LoopwardenApp`
(``app.loopwarden`` settings and ``app.sink``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from faust.transport.drivers import aiokafka as faust_aiokafka

from loopwarden.errors import PublishError
from loopwarden.streams.offsets import probe_end_offsets

log = logging.getLogger(__name__)


class _TunedConsumerThread(faust_aiokafka.AIOKafkaConsumerThread):
    async def _highwaters(self, partitions: list[Any]) -> Mapping[Any, int]:
        reported = await super()._highwaters(partitions)
        kafka = self.app.loopwarden.kafka
        if not kafka.probe_end_offsets:
            return reported
        return await probe_end_offsets(
            kafka.bootstrap_servers, reported, fetch_max_wait_ms=kafka.fetch_max_wait_ms
        )

    def _create_worker_consumer(self, transport: Any) -> Any:
        consumer = super()._create_worker_consumer(transport)
        # aiokafka reads this attribute when it builds its Fetcher in start().
        consumer._fetch_max_wait_ms = self.app.loopwarden.kafka.fetch_max_wait_ms
        return consumer


class _TunedConsumer(faust_aiokafka.Consumer):
    def _new_consumer_thread(self) -> faust_aiokafka.AIOKafkaConsumerThread:
        return _TunedConsumerThread(self, loop=self.loop, beacon=self.beacon)


class _SinkFlushingProducer(faust_aiokafka.Producer):
    """Faust flushes its producer before every commit: deliver the sink first.

    A failed delivery is retried with backoff until it succeeds, so the commit
    waits (and the agents, once the sink is full) instead of passing it; raising
    here would crash the consumer's commit task and stop the worker.
    """

    async def flush(self) -> None:
        errors = self.app.loopwarden.errors
        await self.app.sink.deliver(errors.retry_initial_s, errors.retry_max_s)
        await super().flush()

    async def on_stop(self) -> None:
        if self._producer is not None:
            try:
                await self.app.sink.flush()
            except PublishError as exc:  # not committed: reprocessed by the next worker
                log.error("stopping with %s; their inputs will be processed again", exc)
        await super().on_stop()


class TunedTransport(faust_aiokafka.Transport):
    """Faust's aiokafka transport with the tuned consumer and the sink-flushing producer."""

    Consumer = _TunedConsumer
    Producer = _SinkFlushingProducer
