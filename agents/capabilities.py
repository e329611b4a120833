"""Every capability of a worker, in one list: what it reads, what it produces, how it runs.

This is the composition root of the capabilities. Each is declared with
:class:`~loopwarden.streams.runtime.capability.Capability`; the worker
(:func:`loopwarden.worker.build_worker_app`), the audit replay
(:class:`~loopwarden.agents.audit.replayer.Replayer`), ``loopwarden detect`` and the
fault suite all iterate :data:`CAPABILITIES`; nothing else lists them. The runtime
(``streams/``) never imports this module: it is handed the declarations.

The list is plain data: the wiring and the processors are named by import path and
loaded when used, so reading it costs no Faust and no LanceDB.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from loopwarden.settings import Settings
from loopwarden.streams.runtime.capability import Capability, Replay

if TYPE_CHECKING:
    from loopwarden.agents.experience.store import ExperienceStore
    from loopwarden.agents.fleet.outage_board import OutageBoard
    from loopwarden.agents.memory.service import MemoryService
    from loopwarden.schemas.shared_decode import SharedActionDecodes
    from loopwarden.streams.runtime.app import LoopwardenApp


CAPABILITIES: tuple[Capability, ...] = (
    Capability(
        role="monitor",
        agent="monitor_actions",
        inputs=lambda t: (t.actions, t.actions_reroute),
        outputs=("warnings", "reflection_requests", "memory_lessons"),
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
        role="memory",
        agent="store_lessons",
        inputs=lambda t: (t.memory_lessons,),
        outputs=("memory_outcomes",),
        wiring="loopwarden.agents.memory.agent:register_lessons",
    ),
    Capability(
        role="experience",
        agent="replay_experience",
        inputs=lambda t: (t.actions,),
        outputs=("advice",),
        wiring="loopwarden.agents.experience.agent:register_experience",
        bundled=True,
        replay=Replay(
            "actions",
            "loop",
            "loopwarden.agents.experience.records:TaskProcessor",
            audited=("advice",),
            settle="loopwarden.agents.experience.replay:AdviceReplay",
        ),
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
        self._outage_board: OutageBoard | None = None

    @cached_property
    def action_decodes(self) -> SharedActionDecodes:
        """The actions records decoded once for the monitor and the fleet."""
        from loopwarden.schemas.shared_decode import SharedActionDecodes

        return SharedActionDecodes()

    def outage_board(self, app: LoopwardenApp) -> OutageBoard:
        """The tool outages declared, shared by the monitor and the fleet; the task that
        follows the tool-outages topic into it is declared on ``app`` on first use."""
        if self._outage_board is None:
            from loopwarden.agents.fleet.outage_board import OutageBoard
            from loopwarden.agents.fleet.outage_notices import follow_outage_notices

            self._outage_board = OutageBoard()
            follow_outage_notices(app, self._outage_board)
        return self._outage_board

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
