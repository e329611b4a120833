"""Every capability of a worker, in one list: what it reads, what it produces, how it runs.

A capability is a pure processor (decoded records and state in, one outcome with
*named* outputs out) plus a thin wiring function that hands it to the one generic
agent runner (:func:`loopwarden.streams.runtime.capability_runner.run_capability`).
The worker (:func:`~loopwarden.streams.runtime.worker.build_worker_app`), the audit
replay (:class:`~loopwarden.agents.audit.replayer.Replayer`), ``loopwarden detect``
and the fault suite all iterate :data:`CAPABILITIES`; nothing else lists them.

The list is plain data: the wiring and the processors are named by import path and
loaded when used, so reading it costs no Faust and no LanceDB.
"""

from __future__ import annotations

import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

from loopwarden.settings import Settings, TopicSettings

if TYPE_CHECKING:
    from loopwarden.agents.experience.store import ExperienceStore
    from loopwarden.agents.memory.service import MemoryService


def _always(settings: Settings) -> bool:
    return True


@dataclass(frozen=True, slots=True)
class Replay:
    """How ``loopwarden replay``/``audit`` re-runs a capability from its input topic."""

    input: str
    """The name ``--input`` uses for its topic (``actions``, ``completions``)."""
    keyed_by: Literal["loop", "family", "root"]
    """A loop's records are found by its loop id, its family id (a loop and its reruns)
    or its family of delegated loops (the root loop id)."""
    processor: str
    """Import path of the processor class (built by its ``for_settings``)."""
    audited: tuple[str, ...]
    """The named outputs an audit reproduces and compares with the recorded ones."""

    def build(self, settings: Settings) -> Any:
        """The processor the worker runs, for ``settings``."""
        return pkgutil.resolve_name(self.processor).for_settings(settings)


@dataclass(frozen=True, slots=True)
class Capability:
    """One thing a worker does: a role, its Faust agent, its topics and named outputs."""

    role: str
    """The ``settings.roles`` entry that turns it on."""
    agent: str
    """Its Faust agent's name (and its runner's, its metrics' ``loopwarden.agent``)."""
    inputs: Callable[[TopicSettings], tuple[str, ...]]
    """The topics it reads, read as one stream (none: it is fed over HTTP)."""
    outputs: tuple[str, ...]
    """The named outputs it produces (see ``streams.runtime.outputs.ROUTES``)."""
    wiring: str
    """Import path of ``register(app, resources)``, which builds the processor and its
    state and hands them to the generic runner."""
    bundled: bool = False
    """Its input is consumed as bundles of a partition's records."""
    enabled: Callable[[Settings], bool] = _always
    """Besides its role: whether these settings run it."""
    replay: Replay | None = None

    def runs_in(self, settings: Settings) -> bool:
        """True when a worker with ``settings`` runs this capability."""
        return self.role in settings.roles and self.enabled(settings)

    def wire(self, app: Any, resources: WorkerResources) -> Any:
        """Declare the capability's agent (and what it needs) on the Faust ``app``."""
        return pkgutil.resolve_name(self.wiring)(app, resources)


CAPABILITIES: tuple[Capability, ...] = (
    Capability(
        role="monitor",
        agent="monitor_actions",
        inputs=lambda t: (t.actions, t.actions_reroute),
        outputs=("warnings", "reflection_requests", "memory_writes"),
        wiring="loopwarden.agents.monitor.agent:register_action_monitor",
        bundled=True,
        replay=Replay(
            "actions",
            "loop",
            "loopwarden.agents.monitor.records:RecordProcessor",
            audited=("warnings", "reflection_requests"),
        ),
    ),
    Capability(
        role="guardrails",
        agent="apply_guardrails",
        inputs=lambda t: (t.loop_completions, t.completions_reroute),
        outputs=("decisions", "warnings"),
        wiring="loopwarden.agents.guardrails.agent:register_guardrails",
        bundled=True,
        replay=Replay(
            "completions",
            "family",
            "loopwarden.agents.guardrails.records:GuardrailProcessor",
            audited=("decisions", "warnings"),
        ),
    ),
    Capability(
        role="fleet",
        agent="watch_fleet",
        inputs=lambda t: (t.actions, t.fleet_reroute),
        outputs=("warnings", "fleet_warnings", "tool_outages"),
        wiring="loopwarden.agents.fleet.agent:register_fleet",
        bundled=True,
        replay=Replay(
            "actions",
            "root",
            "loopwarden.agents.fleet.records:FleetProcessor",
            audited=("warnings", "fleet_warnings"),
        ),
    ),
    Capability(
        role="memory",
        agent="store_memories",
        inputs=lambda t: (t.memory_writes,),
        outputs=("memory_outcomes",),
        wiring="loopwarden.agents.memory.agent:register_memory",
    ),
    Capability(
        role="experience",
        agent="replay_experience",
        inputs=lambda t: (t.actions,),
        outputs=("advice",),
        wiring="loopwarden.agents.experience.agent:register_experience",
        bundled=True,
    ),
    Capability(
        role="analyst",
        agent="analyze_reflections",
        inputs=lambda t: (t.reflection_requests,),
        outputs=("reflections", "warnings", "loop_completions"),
        wiring="loopwarden.agents.analyst.agent:register_analyst",
        enabled=lambda s: s.analyst.enabled,
    ),
    Capability(
        role="otlp",
        agent="ingest_otlp_spans",
        inputs=lambda t: (t.otlp_spans,),
        outputs=("actions",),
        wiring="loopwarden.agents.otlp.agent:register_otlp_ingest",
    ),
    Capability(
        role="hooks",
        agent="claude_code_hooks",
        inputs=lambda t: (),
        outputs=("actions",),
        wiring="loopwarden.agents.hooks.endpoint:register_claude_code_hooks",
        enabled=lambda s: s.web_port > 0,
    ),
)
"""Every capability, in the order a worker declares them."""


def replayable() -> list[Capability]:
    """The capabilities ``loopwarden replay`` and ``audit`` re-run (deterministic, event time)."""
    return [c for c in CAPABILITIES if c.replay is not None]


def capability(role: str) -> Capability:
    """The capability of ``role``."""
    for each in CAPABILITIES:
        if each.role == role:
            return each
    raise KeyError(f"no capability with role {role!r}")


class WorkerResources:
    """What capabilities of one worker share, made on first use (a worker without the
    memory, experience or analyst role never opens LanceDB)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    @cached_property
    def memory(self) -> MemoryService:
        """The memory service (LanceDB table, embedder, conflict judge)."""
        from loopwarden.agents.memory.judge import ConflictJudge
        from loopwarden.agents.memory.service import MemoryService

        return MemoryService(
            self.settings.memory,
            judge=ConflictJudge(self.settings.analyst),
            prewarm=True,
            background_upkeep=True,
        )

    @cached_property
    def experience(self) -> ExperienceStore:
        """The experience store, sharing the memory service's embedder."""
        from loopwarden.agents.experience.store import ExperienceStore

        return ExperienceStore(
            self.settings.experience,
            self.settings.memory,
            shared_embedder=lambda: self.memory.embedder,
        )
