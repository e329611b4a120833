"""The composition root of a worker: the runtime (``streams/``) with every capability
(:data:`~loopwarden.agents.capabilities.CAPABILITIES`) and the resources they share.

``loopwarden worker`` runs :func:`run_worker`; tests and embedders build the same app
with :func:`build_worker_app`, or drive its keyed capabilities without a broker with
:func:`in_memory_worker`.
"""

from __future__ import annotations

from loopwarden.agents.capabilities import CAPABILITIES
from loopwarden.settings import Settings
from loopwarden.streams.runtime import worker as runtime
from loopwarden.streams.runtime.app import LoopwardenApp
from loopwarden.streams.runtime.in_memory import InMemoryWorker, ManualClock
from loopwarden.streams.runtime.resources import WorkerResources
from loopwarden.streams.runtime.telemetry.providers import Telemetry


def build_worker_app(
    settings: Settings | None = None, telemetry: Telemetry | None = None
) -> LoopwardenApp:
    """The Faust app with the agents of ``settings.roles``, their tables, the API and the
    telemetry endpoints (``telemetry``: the providers, default from ``settings``)."""
    settings = settings or Settings()
    return runtime.assemble_worker_app(settings, CAPABILITIES, WorkerResources(settings), telemetry)


def run_worker(settings: Settings | None = None) -> None:
    """Run a worker in this process until it is stopped (SIGINT/SIGTERM)."""
    runtime.run_worker(settings or Settings(), build_worker_app)


def in_memory_worker(
    settings: Settings | None = None, clock: ManualClock | None = None
) -> InMemoryWorker:
    """The keyed capabilities of ``settings.roles`` over topics in memory, on ``clock``
    (:class:`~loopwarden.streams.runtime.in_memory.InMemoryWorker`: no broker, no Faust)."""
    return InMemoryWorker(settings or Settings(), CAPABILITIES, clock)
