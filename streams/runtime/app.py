"""The Faust application, tuned for per-record cost and fast group joins.

The Faust/aiokafka workarounds (fetch wait, end-offset probe, sink flush before
commits) live in :mod:`loopwarden.streams.runtime.workarounds`, each with a contract
test. The built-in Monitor sensor costs about 40 % of throughput and is removed;
:mod:`loopwarden.streams.runtime.telemetry` replaces it (metrics per event, not per
Faust message, spans, rebalance and summary logs). Faust's ``/router`` and
``/table`` pages are off: they would serve table values without authentication.

Group joins: on Tansu a JoinGroup waits half of the session timeout for other
members (measured: 60 s → 30 s, 10 s → 5 s, 6 s → 3 s), which was the "33 s
start" of a default worker. ``kafka.session_timeout_s`` defaults to 6 s.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterable
from typing import Any, cast

import faust
from mode import ServiceT
from opentelemetry.trace import Tracer

from loopwarden.settings import Settings
from loopwarden.streams.client.security import faust_credentials
from loopwarden.streams.runtime.backoff import Backoff
from loopwarden.streams.runtime.bundles import BundleAcks
from loopwarden.streams.runtime.capability import Capability
from loopwarden.streams.runtime.dead_letters import DeadLetters
from loopwarden.streams.runtime.outcomes import reroute_to
from loopwarden.streams.runtime.outputs import OutputRouter
from loopwarden.streams.runtime.replies import Replies
from loopwarden.streams.runtime.runner import AgentRunner, ErrorPolicy
from loopwarden.streams.runtime.service_log import SERVICE_LOG
from loopwarden.streams.runtime.sink import RecordSink
from loopwarden.streams.runtime.telemetry.loop_health import LoopHealth
from loopwarden.streams.runtime.telemetry.metrics import LagObserver, WorkerMetrics
from loopwarden.streams.runtime.telemetry.providers import Telemetry, start_telemetry
from loopwarden.streams.runtime.telemetry.sensor import LifecycleLog
from loopwarden.streams.runtime.telemetry.warning_sink import WarningTelemetry
from loopwarden.streams.runtime.workarounds import (
    TunedTransport,
    aiokafka_producer,
    without_monitor,
)


class LoopwardenApp(faust.App):
    """A ``faust.App`` with loopwarden's settings, tuned consumer and batched output sink."""

    logger = SERVICE_LOG  # mode's start/stop narration: quiet at info

    loopwarden: Settings
    sink: RecordSink
    outputs: OutputRouter
    resources: Any
    """What the capabilities share (the composition root's resources)."""
    capabilities: tuple[Capability, ...] = ()
    """Every capability the worker was assembled with (those it runs and the others:
    the topics it creates are derived from all of them)."""
    answering_roles: tuple[str, ...] = ()
    """The roles of this worker that answer every action event with a verdict."""
    output_sinks: dict[str, Any]
    """The sinks besides Kafka attached from settings, by name (``webhook``)."""
    dead_letters: DeadLetters
    replies: Replies
    runners: dict[str, AgentRunner]
    bundled_topics: set[str]
    telemetry: Telemetry
    metrics: WorkerMetrics
    loop_health: LoopHealth

    @property
    def otel_tracer(self) -> Tracer | None:
        """loopwarden's OpenTelemetry tracer; None with tracing off (no span work at all).
        (``tracer`` is Faust's own opentracing hook.)"""
        return self.telemetry.tracer

    def raw_topic(self, *names: str, bundled: bool = False) -> Any:
        """A topic (or several, read as one stream) of bytes keys and values with the
        configured partition count (agents decode themselves, so a bad record cannot
        stop them).

        ``bundled``: the consumer hands each fetched run of a partition's records
        to the agent as one :class:`~loopwarden.streams.runtime.bundles.RecordBundle`
        message (its runner must be :class:`AgentRunner`, which opens bundles).
        """
        kafka = self.loopwarden.kafka
        maxsize = None
        if bundled:
            self.bundled_topics.update(names)
            # the stream buffer counts messages: as many records as unbundled, not
            # kafka.bundle_max_records times as many (a backlog was read far ahead)
            maxsize = max(4, kafka.stream_buffer_maxsize // kafka.bundle_max_records)
        return self.topic(
            *names,
            key_serializer="raw",
            value_serializer="raw",
            partitions=max(map(self.loopwarden.topics.partitions_of, names)),
            maxsize=maxsize,
        )

    def reroute(self, topic: str, reroutes: Iterable[Any]) -> None:
        """Queue events for their loop's own partition of ``topic`` (a re-route topic);
        each has ``partition``, ``key``, ``value`` and ``headers`` (its origin)."""
        reroute_to(self.sink, topic, reroutes)

    def runner(self, name: str, on_error: Callable[[], object] | None = None) -> AgentRunner:
        """The :class:`AgentRunner` for agent ``name``, with the configured error policy."""
        errors = self.loopwarden.errors
        runner = AgentRunner(
            name,
            self.dead_letters,
            policy=ErrorPolicy(errors.on_processing_error),
            retry=Backoff(errors.retry_initial_s, errors.retry_max_s, errors.max_retries),
            on_error=on_error,
            flush_when_full=self.sink.flush,
            is_full=lambda: self.sink.full,
            metrics=self.metrics,
        )
        self.runners[name] = runner
        return runner

    def FlowControlQueue(self, maxsize: int | None = None, *, clear_on_resume: bool = False) -> Any:
        """Stream and channel buffers keep their records when the flow resumes.

        Faust clears them on every resume, and it resumes once more *after* the
        seek to the committed offsets that ends a rebalance: records fetched from
        the new position and already queued were thrown away, while the consumer
        had read past them (a loop's state skipped the event, or the commit
        stalled behind it). Records of an earlier generation are still skipped by
        the stream, so nothing stale is processed. See ``streams.workarounds``.
        """
        return super().FlowControlQueue(maxsize, clear_on_resume=False)

    def _new_transport(self) -> Any:
        return TunedTransport(self.conf.broker_consumer, self)

    def _new_producer_transport(self) -> Any:
        return TunedTransport(self.conf.broker_producer, self)

    def on_init_dependencies(self) -> Iterable[ServiceT]:
        services = super().on_init_dependencies()
        without_monitor(self)
        return services


def advertised_web_host(settings: Settings) -> str:
    """The host other workers use to forward API requests to this one."""
    if settings.web_host:
        return settings.web_host
    if settings.web_bind in ("127.0.0.1", "localhost", "::1"):
        return "127.0.0.1"
    return socket.gethostname()


def broker_urls(bootstrap_servers: str) -> list[str]:
    """``host:port,host:port`` → faust broker URLs."""
    hosts = [h.strip() for h in bootstrap_servers.split(",") if h.strip()]
    return [h if "://" in h else f"kafka://{h}" for h in hosts]


def create_app(settings: Settings, telemetry: Telemetry | None = None) -> LoopwardenApp:
    """Build the Faust app without agents (see
    :func:`~loopwarden.streams.runtime.worker.assemble_worker_app`); ``telemetry``: the
    providers to report through (default: from ``settings``)."""
    kafka = settings.kafka
    app = LoopwardenApp(
        settings.app_id,
        broker=broker_urls(kafka.bootstrap_servers),
        broker_credentials=faust_credentials(kafka.security),
        store="memory://",
        topic_partitions=settings.topics.partitions,
        topic_replication_factor=settings.topics.replication_factor,
        web_enabled=settings.web_port > 0,
        web_port=settings.web_port or 6066,
        web_bind=settings.web_bind,
        web_host=advertised_web_host(settings),
        # Faust's /router and /table pages would expose every table's values unauthenticated
        web_router_enabled=False,
        web_tables_enabled=False,
        consumer_auto_offset_reset="earliest",
        broker_session_timeout=kafka.session_timeout_s,
        broker_heartbeat_interval=kafka.heartbeat_interval_s,
        broker_rebalance_timeout=kafka.rebalance_timeout_s,
        broker_max_poll_records=kafka.max_poll_records,
        broker_commit_interval=kafka.commit_interval_s,
        stream_buffer_maxsize=kafka.stream_buffer_maxsize,
        stream_wait_empty=False,
        # a standby is pure cost with the memory store: a partition that becomes active
        # is recovered from its changelog's start anyway (no persisted offset), and Faust
        # drops a standby's keys after every recovery; standbys only read every other
        # worker's changelog traffic (issue 72)
        table_standby_replicas=0,
        producer_linger=kafka.producer_linger_ms / 1000.0,
        producer_request_timeout=kafka.producer_request_timeout_s,
        producer_max_batch_size=1024 * 1024,
        autodiscover=False,
        datadir=os.path.join(settings.data_dir, "{conf.name}-data"),
    )
    app.loopwarden = settings
    # table recovery's changelog buffer is still cleared on resume, as Faust does
    app.flow_control.manage_queue(cast(Any, app.tables).changelog_queue)  # not in its type
    app.replies = Replies()
    app.runners = {}
    app.bundled_topics = set()
    app.sensors.add(BundleAcks(app))
    app.telemetry = telemetry or start_telemetry(settings)
    app.metrics = WorkerMetrics(app.telemetry.meter, LagObserver(app))
    app.loop_health = LoopHealth()
    app.sensors.add(LifecycleLog(app))
    app.sink = RecordSink(
        lambda: aiokafka_producer(app),  # the aiokafka producer Faust flushes
        linger_s=kafka.producer_linger_ms / 1000.0,
    )
    app.outputs = OutputRouter(app.sink, settings)
    app.outputs.attach(WarningTelemetry(app.metrics, app.loop_health))
    app.dead_letters = DeadLetters(
        app.sink,
        settings.topics.dead_letter,
        redact_values=settings.limits.redact_dead_letters,
        burst=settings.errors.log_burst,
    )
    app.dead_letters.on_sent = app.metrics.dead_letter
    app.raw_topic(settings.topics.dead_letter)  # every capability may write to it
    return app
