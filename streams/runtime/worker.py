"""The worker process: a Faust app with the agents of the capabilities it is handed,
their tables, the API and the telemetry endpoints, and the logging a worker needs.

The runtime does not know which capabilities exist: the composition root
(:mod:`loopwarden.worker`) hands it :data:`~loopwarden.agents.capabilities.CAPABILITIES`
and the resources they share.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
from collections.abc import Callable, Sequence
from typing import Any

import faust

from loopwarden.errors import ConfigurationError
from loopwarden.schemas.redaction import default_redactor
from loopwarden.settings import Settings
from loopwarden.streams.runtime.app import LoopwardenApp, create_app
from loopwarden.streams.runtime.blas_threads import limit_blas_threads
from loopwarden.streams.runtime.capability import Capability
from loopwarden.streams.runtime.dead_letters import RateLimitedLog
from loopwarden.streams.runtime.diagnostics import register_diagnostics
from loopwarden.streams.runtime.output_sinks import attach_output_sinks
from loopwarden.streams.runtime.service_log import SERVICE_LOG
from loopwarden.streams.runtime.telemetry.providers import Telemetry, start_telemetry
from loopwarden.streams.runtime.telemetry.summary import register_summary
from loopwarden.streams.runtime.telemetry.web import register_telemetry_web
from loopwarden.streams.runtime.watchdog import register_broker_watchdog
from loopwarden.streams.tools.topics import ensure_topics

AppBuilder = Callable[[Settings, "Telemetry | None"], LoopwardenApp]
"""Builds a worker's app for settings and telemetry (the composition root's
:func:`loopwarden.worker.build_worker_app`)."""


def assemble_worker_app(
    settings: Settings,
    capabilities: Sequence[Capability],
    resources: Any,
    telemetry: Telemetry | None = None,
) -> LoopwardenApp:
    """The Faust app with the agents of those of ``capabilities`` that ``settings``
    runs, sharing ``resources`` (``app.resources``), with the API and the telemetry
    endpoints (``telemetry``: the providers, default from ``settings``)."""
    default_redactor().use_prefilter()  # every capability's decoder redacts
    app = create_app(settings, telemetry)
    app.resources = resources
    app.capabilities = tuple(capabilities)
    app.answering_roles = tuple(
        sorted({c.role for c in capabilities if c.answers and c.runs_in(settings)})
    )
    for capability in capabilities:
        if capability.runs_in(settings):
            capability.wire(app, resources)
    if not app.agents:
        raise ConfigurationError("this worker has no agents to run: check LOOPWARDEN_ROLES")
    attach_output_sinks(app)
    register_broker_watchdog(app)
    register_diagnostics(app)
    register_summary(app)
    if settings.web_port:
        register_telemetry_web(app)
    return app


class _QuietRepeats(logging.Filter):
    """Lets ``burst`` lines of one message template through per minute, then counts.

    With the broker unreachable aiokafka logs every failed connection, fetch and
    metadata request: about 70 error lines a second, which drown the one line
    that matters. The repeats are summarised once a minute instead.
    """

    def __init__(self, burst: int) -> None:
        super().__init__()
        self.limiter = RateLimitedLog(logging.getLogger("loopwarden.broker"), burst=burst)

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        return self.limiter.allow(f"{record.name}: {record.msg}")


_KAFKA_CLIENT_LOGGERS = (
    "aiokafka",
    "aiokafka.conn",
    "aiokafka.cluster",
    "aiokafka.consumer.fetcher",
    "aiokafka.consumer.group_coordinator",
    "aiokafka.consumer.consumer",
    "aiokafka.producer.sender",
    "aiokafka.producer.producer",
)


def quiet_kafka_client_logs(burst: int) -> None:
    """Rate-limit repeated warnings and errors of the Kafka client (see :class:`_QuietRepeats`)."""
    quiet = _QuietRepeats(burst)
    for name in _KAFKA_CLIENT_LOGGERS:
        logging.getLogger(name).addFilter(quiet)


def run_worker(settings: Settings, build: AppBuilder) -> None:
    """Run the worker ``build`` makes in this process until it is stopped
    (SIGINT/SIGTERM)."""
    quiet_kafka_client_logs(settings.errors.log_burst)
    limit_blas_threads()
    telemetry = start_telemetry(settings, install_global=True)
    try:
        app = build(settings, telemetry)  # settings errors surface before Kafka
        os.makedirs(settings.data_dir, exist_ok=True)  # Faust creates only the last level
        asyncio.run(ensure_topics(settings, app.capabilities, list(app.tables)))  # its tables
        # Everything imported and built so far lives as long as the process: frozen out
        # of the cyclic collector, whose full scans otherwise walk it again and again
        # while a batch allocates its outcomes (30,000 outcome dicts: 6.8 → 1.9 µs each).
        gc.freeze()
        new_faust_worker(app, settings).execute_from_commandline()
    finally:
        telemetry.shutdown()  # pending spans and metrics go out


def new_faust_worker(app: LoopwardenApp, settings: Settings) -> faust.Worker:
    """Faust's worker for ``app``, without its terminal spinner.

    To spin on every log message the spinner sets the root logger to DEBUG and
    leaves it there: every debug call of aiokafka, Faust and mode then built a log
    record that no handler printed (8 % of a worker's CPU at 1,000 events/s).
    """
    worker = faust.Worker(app, loglevel=settings.log_level.upper(), quiet=True)
    worker.spinner = None
    quiet_library_logs(settings.log_level, settings.log_library_info)
    return worker


_LIBRARY_LOGGERS = ("faust", "mode", "aiokafka", "lancedb", "opentelemetry", SERVICE_LOG.name)


def quiet_library_logs(level: str, keep_info: Sequence[str] = ()) -> None:
    """At info, the worker's own lines only: Faust, mode and aiokafka narrate every
    service start and fetch at info. They keep warnings and errors (but the loggers of
    ``keep_info``: info); ``debug`` shows all."""
    if logging.getLevelName(level.upper()) == logging.INFO:
        for name in _LIBRARY_LOGGERS:
            logging.getLogger(name).setLevel(logging.WARNING)
        for name in keep_info:
            logging.getLogger(name).setLevel(logging.INFO)
