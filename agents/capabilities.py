"""Every capability of a worker, in one list: what it reads, what it produces, how it runs.

This is the composition root of the capabilities. Each is declared once, with
:class:`~loopwarden.streams.runtime.capability.Capability`; the worker
(:func:`loopwarden.worker.build_worker_app`), the audit replay
(:class:`~loopwarden.agents.audit.replayer.Replayer`), ``loopwarden detect``,
``loopwarden topics`` and the fault suite all read :data:`CAPABILITIES` (and
:data:`STATE_TABLES`, derived from it); nothing else lists them. The runtime
(``streams/``) never imports this module: it is handed the declarations.

The list is plain data: the wiring and the processors are loaded by the small functions
below when used (so reading it costs no Faust and no LanceDB), each an import the type
checker follows.
"""

from __future__ import annotations

from typing import Any

from loopwarden.agents.experience.declaration import OPEN_TASKS
from loopwarden.agents.fleet.declaration import FAMILY_STATES as FLEET_FAMILIES
from loopwarden.agents.guardrails.declaration import FAMILY_STATES as GUARDRAIL_FAMILIES
from loopwarden.agents.monitor.declaration import LOOP_STATES
from loopwarden.settings import Settings
from loopwarden.streams.runtime.capability import (
    Batches,
    BatchProcessing,
    BatchStepFactory,
    Capability,
    Register,
    Replay,
    SettleFactory,
)


def _monitor() -> Register:
    from loopwarden.agents.monitor.agent import register_action_monitor

    return register_action_monitor


def _monitor_processor() -> Any:
    from loopwarden.agents.monitor.records import RecordProcessor

    return RecordProcessor.for_settings


def _guardrails() -> Register:
    from loopwarden.agents.guardrails.agent import register_guardrails

    return register_guardrails


def _guardrails_processor() -> Any:
    from loopwarden.agents.guardrails.records import GuardrailProcessor

    return GuardrailProcessor.for_settings


def _fleet() -> Register:
    from loopwarden.agents.fleet.agent import register_fleet

    return register_fleet


def _fleet_processor() -> Any:
    from loopwarden.agents.fleet.records import FleetProcessor

    return FleetProcessor.for_settings


def _memory() -> Register:
    from loopwarden.agents.memory.agent import register_memory

    return register_memory


def _lessons() -> Register:
    from loopwarden.agents.memory.agent import register_lessons

    return register_lessons


def _memory_step() -> BatchStepFactory:
    from loopwarden.agents.memory.step import memory_step

    return memory_step


def _memory_batches(settings: Settings) -> Batches:
    from loopwarden.agents.memory.step import memory_batches

    return memory_batches(settings)


def _lesson_batches(settings: Settings) -> Batches:
    from loopwarden.agents.memory.step import lesson_batches

    return lesson_batches(settings)


def _experience() -> Register:
    from loopwarden.agents.experience.agent import register_experience

    return register_experience


def _experience_processor() -> Any:
    from loopwarden.agents.experience.records import TaskProcessor

    return TaskProcessor.for_settings


def _advice_replay() -> SettleFactory:
    from loopwarden.agents.experience.replay import AdviceReplay

    return AdviceReplay


def _analyst() -> Register:
    from loopwarden.agents.analyst.agent import register_analyst

    return register_analyst


def _otlp() -> Register:
    from loopwarden.agents.otlp.agent import register_otlp_ingest

    return register_otlp_ingest


def _hooks() -> Register:
    from loopwarden.agents.hooks.endpoint import register_claude_code_hooks

    return register_claude_code_hooks


CAPABILITIES: tuple[Capability, ...] = (
    Capability(
        role="monitor",
        agent="monitor_actions",
        outputs=("warnings", "reflection_requests", "memory_lessons", "verdicts"),
        wiring=_monitor,
        bundled=True,
        replay=Replay("actions", "loop", _monitor_processor, ("warnings", "reflection_requests")),
        state=LOOP_STATES,
        answers=True,
    ),
    Capability(
        role="guardrails",
        agent="apply_guardrails",
        outputs=("decisions", "warnings"),
        wiring=_guardrails,
        bundled=True,
        replay=Replay("completions", "family", _guardrails_processor, ("decisions", "warnings")),
        state=GUARDRAIL_FAMILIES,
    ),
    Capability(
        role="fleet",
        agent="watch_fleet",
        outputs=("warnings", "fleet_warnings", "tool_outages", "verdicts"),
        wiring=_fleet,
        bundled=True,
        replay=Replay("actions", "root", _fleet_processor, ("warnings", "fleet_warnings")),
        state=FLEET_FAMILIES,
        answers=True,
    ),
    Capability(
        role="memory",
        agent="store_memories",
        input_topics=lambda t: (t.memory_writes,),
        outputs=("memory_outcomes",),
        wiring=_memory,
        batches=BatchProcessing(_memory_step, _memory_batches),
    ),
    Capability(
        role="memory",
        agent="store_lessons",
        input_topics=lambda t: (t.memory_lessons,),
        outputs=("memory_outcomes",),
        wiring=_lessons,
        batches=BatchProcessing(_memory_step, _lesson_batches),
    ),
    Capability(
        role="experience",
        agent="replay_experience",
        # its home topic only: what the monitor re-routes is the monitor's to apply
        input_topics=lambda t: (t.actions,),
        outputs=("advice",),
        wiring=_experience,
        bundled=True,
        replay=Replay("actions", "loop", _experience_processor, ("advice",), settle=_advice_replay),
        state=OPEN_TASKS,
    ),
    Capability(
        role="analyst",
        agent="analyze_reflections",
        input_topics=lambda t: (t.reflection_requests,),
        outputs=("reflections", "warnings", "loop_completions"),
        wiring=_analyst,
        enabled=lambda s: s.analyst.enabled,
    ),
    Capability(
        role="otlp",
        agent="ingest_otlp_spans",
        input_topics=lambda t: (t.otlp_spans,),
        outputs=("actions",),
        wiring=_otlp,
    ),
    Capability(
        role="hooks",
        agent="claude_code_hooks",  # fed over HTTP: no input topic
        outputs=("actions",),
        wiring=_hooks,
        enabled=lambda s: s.web_port > 0,
    ),
)
"""Every capability, in the order a worker declares them."""

STATE_TABLES: tuple[str, ...] = tuple(c.state.table for c in CAPABILITIES if c.state is not None)
"""Every capability's state table (their changelogs are planned and created)."""


def replayable() -> list[Capability]:
    """The capabilities ``loopwarden replay`` and ``audit`` re-run (deterministic, event time)."""
    return [c for c in CAPABILITIES if c.replay is not None]


def capability(role: str) -> Capability:
    """The capability of ``role``."""
    for each in CAPABILITIES:
        if each.role == role:
            return each
    raise KeyError(f"no capability with role {role!r}")
