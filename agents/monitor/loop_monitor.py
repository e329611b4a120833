"""The pure core of the action monitor: one event in, findings out.

:class:`LoopMonitor` applies an :class:`ActionEvent` to a loop's
:class:`LoopState` and returns the warnings and reflection requests it causes.
It reads no clock and does no I/O, so the Faust agent, the offline ``detect``
command and audits run the very same decisions.

Findings are JSON-ready dicts shaped exactly as :class:`LoopWarning` and
:class:`ReflectionRequest` (a test holds them to it): the hot path builds and
encodes them without a validation round trip. ``LoopWarning.model_validate``
turns one into the typed model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loopwarden.agents import findings as findings_builder
from loopwarden.agents.monitor.gating import Gating
from loopwarden.agents.monitor.lessons import lesson, lesson_key
from loopwarden.agents.monitor.state import LoopState
from loopwarden.agents.provenance import monitor_stamp
from loopwarden.agents.reflection.levels import (
    decide_reflection_level,
    memory_budget_bytes,
    memory_query,
)
from loopwarden.agents.spin import texts
from loopwarden.agents.spin.code_edit import edit_record
from loopwarden.agents.spin.detector import REGISTRY, Finding, Observation, said_by_counterpart
from loopwarden.agents.spin.gate import GateModel
from loopwarden.agents.spin.ladder import raised
from loopwarden.agents.spin.profiles import resolve as resolve_profile
from loopwarden.agents.spin.repeat_texts import step_text
from loopwarden.agents.spin.signature import call_signature
from loopwarden.errors import ConfigurationError
from loopwarden.schemas import codec
from loopwarden.schemas.events import ActionEvent
from loopwarden.schemas.levels import ReflectionLevel
from loopwarden.schemas.outputs import (
    JsonObject,
    LessonRecord,
    ReflectionRequestRecord,
    WarningRecord,
)
from loopwarden.schemas.positions import Origin
from loopwarden.schemas.reflection import ReflectionRequestKind
from loopwarden.settings import DetectionSettings

Output = WarningRecord | ReflectionRequestRecord | LessonRecord
"""Any record the monitor produces."""


@dataclass(slots=True)
class Findings:
    """What one event caused: warnings and reflection requests as JSON-ready dicts."""

    level: ReflectionLevel
    warnings: list[WarningRecord] = field(default_factory=list)
    requests: list[ReflectionRequestRecord] = field(default_factory=list)
    lessons: list[LessonRecord] = field(default_factory=list)


class LoopMonitor:
    """Applies action events to loop state: Layer 1 and 3 spins, the level tree, requests."""

    def __init__(
        self, settings: DetectionSettings | None = None, stamp: JsonObject | None = None
    ) -> None:
        self.settings = settings or DetectionSettings()
        self.stamp = stamp or monitor_stamp(self.settings, float("inf"), 256 * 1024)
        profile = resolve_profile(self.settings)
        unknown = [name for name in profile.detectors if name not in REGISTRY]
        if unknown:
            known = ", ".join(sorted(REGISTRY))
            raise ConfigurationError(
                f"unknown detector {unknown[0]!r} in detection.detectors: {known}"
            )
        self.detectors: tuple[str, ...] = profile.detectors
        self.ladder = profile.ladder
        self.gating = Gating(self.settings) if profile.gate else None
        self.uses_features = self.gating is not None or any(
            REGISTRY[name].uses_features for name in self.detectors
        )
        self.uses_signature = self.uses_features or any(
            REGISTRY[name].uses_signature for name in self.detectors
        )

    @property
    def gate(self) -> GateModel | None:
        """The gate model in use (None: the profile has no gate)."""
        return self.gating.gate if self.gating is not None else None

    def observe(
        self,
        state: LoopState,
        event: ActionEvent,
        origin: Origin | None = None,
        *,
        outage: bool = False,
    ) -> Findings | None:
        """Apply ``event`` to ``state``; None when it was applied or seen before.

        ``origin`` is where the event was published; an event at or before the
        loop's last applied position on the same partition is skipped (a replay). An
        event whose id is among the loop's recent actions is skipped too, and counted
        in ``state.duplicates``: the same id published again.
        """
        cfg = self.settings
        payload = event.payload
        if origin is not None and state.already_applied(origin):
            return None
        if state.has_event(event.event_id):
            state.duplicates += 1  # an id applied before, from another position
            if origin is not None:
                state.mark_applied(origin)
            return None

        if outage:
            # a failure of a tool that fails for everyone (the fleet role's outage): not
            # the agent's doing, so no detector counts it and no reflection is asked; it
            # is still remembered, marked as the outage's
            state.seq += 1
            state.outage_failures += 1
            covered = Findings(ReflectionLevel.NONE)
            if cfg.learn_from_failures and state.learns("outage:" + lesson_key(event)):
                covered.lessons.append(lesson(state, event, cfg, during_outage=True))
            return self._applied(state, event, origin, covered)
        if said_by_counterpart(payload, cfg):
            # what the person said: not one of the agent's actions (no count, no window,
            # no ladder step, no reflection), so no detector sees it and no streak breaks
            if self.uses_features:
                state.step_history().hear()
            return self._applied(state, event, origin, Findings(ReflectionLevel.NONE))
        same_step = payload.response_id is not None and payload.response_id == state.response_id
        state.response_id = payload.response_id
        state.seq += 1
        if payload.iteration is not None:
            state.iteration = payload.iteration
        elif not same_step:
            state.iteration += 1
        if payload.spin_threshold is not None:
            state.spin_threshold = min(payload.spin_threshold, cfg.max_spin_threshold)
        if payload.reflection_enabled is not None:
            state.reflection_enabled = payload.reflection_enabled
        threshold = state.spin_threshold or cfg.spin_threshold

        state.window.append(self._record(event, state.iteration))
        keep = max(cfg.action_window, threshold, cfg.logic_spin_threshold)
        if len(state.window) > keep:
            del state.window[:-keep]
        signature = (
            call_signature(event, cfg.volatile_param_keys, cfg.volatile_value_pattern)
            if self.uses_signature
            else ""
        )
        seen = Observation(
            event,
            state.seq,
            state.iteration,
            state.window,
            threshold,
            cfg,
            signature,
            event.result_key,
            same_step,
            state.step_history().observe(event, signature, event.result_key)
            if self.uses_features
            else None,
        )
        found = []
        for name in self.detectors:
            finding = state.detector(name).observe(seen)
            if finding is not None:
                found.append(finding)
        decision = None
        if self.gating is not None:
            found, decision = self.gating.decide(seen, found)

        level = decide_reflection_level(
            enabled=cfg.reflection_enabled and state.reflection_enabled is not False,
            override=payload.reflection_level,
            failed=payload.failed,
            simple=payload.simple or payload.action_type in cfg.simple_action_types,
            iteration=state.iteration,
            spinning=any(f.escalates for f in found),
            iteration_threshold=cfg.iteration_threshold,
        )
        findings = Findings(level)
        step = state.ladder.step(any(f.spin for f in found), cfg) if self.ladder else None
        shown_spin = False
        for finding in found:
            if finding.needs_reflection and level is ReflectionLevel.NONE:
                continue
            if self.ladder and finding.spin:
                if step is None or shown_spin:
                    continue  # the ladder shows one warning per step of an episode
                shown_spin = True
                warning_level = raised(level, step)
                findings.warnings.append(
                    self._finding_warning(state, event, warning_level, finding, step, decision)
                )
                if step == "escalate":
                    findings.requests.append(self._semantic_request(state, event, level))
                continue
            findings.warnings.append(self._finding_warning(state, event, level, finding))
            if finding.semantic_check:
                findings.requests.append(self._semantic_request(state, event, level))
        spin_reason = next((f.reason for f in found if f.spin), None)
        if level.at_least(ReflectionLevel.STANDARD):
            findings.requests.append(self._reflection_request(state, event, level, spin_reason))
        if cfg.learn_from_failures and (  # a failure once per loop, every ending
            state.learns(lesson_key(event)) if payload.failed else payload.terminated
        ):
            findings.lessons.append(lesson(state, event, self.settings))
        if payload.terminated and cfg.task_completion_budget:
            findings.requests.append(self._completion_request(state, event, level))

        return self._applied(state, event, origin, findings)

    @staticmethod
    def _applied(
        state: LoopState, event: ActionEvent, origin: Origin | None, findings: Findings
    ) -> Findings:
        if origin is not None:
            state.mark_applied(origin)
        if not state.first_seen:
            state.first_seen = event.occurred_at
        state.last_seen = max(state.last_seen, event.occurred_at)
        return findings

    # -- builders ---------------------------------------------------------------------------

    def _bounded(self, params: dict[str, Any]) -> dict[str, Any]:
        """``params`` as state keeps them: replaced when over ``state_params_max_bytes``."""
        if params and len(codec.dumps(params)) > self.settings.state_params_max_bytes:
            return {"_omitted": "larger than detection.state_params_max_bytes"}
        return params

    def _record(self, event: ActionEvent, iteration: int) -> dict[str, Any]:
        payload = event.payload
        params = self._bounded(payload.params)
        return {
            "event_id": event.event_id,
            "action_type": payload.action_type,
            "action_name": payload.action_name,
            "params": params,
            "iteration": iteration,
            "success": payload.success,
            "error_message": payload.error_message,
            "occurred_at": event.occurred_at,
            "edit": _edit(event),
        }

    def _finding_warning(
        self,
        state: LoopState,
        event: ActionEvent,
        level: ReflectionLevel,
        finding: Finding,
        step: str | None = None,
        decision: JsonObject | None = None,
    ) -> WarningRecord:
        return findings_builder.warning(
            kind=finding.kind,
            loop_id=state.loop_id,
            trigger_event_id=event.event_id,
            level=level.value,
            reason=finding.reason,
            suggestions=finding.suggestions,
            event_ids=finding.event_ids,
            action_type=event.payload.action_type,
            iteration=state.iteration,
            consecutive_count=finding.consecutive_count,
            edit=finding.edit,
            timeline_message=_with_step(finding.timeline_message, self.settings.language, step),
            occurred_at=event.occurred_at,
            stamp=self.stamp,
            step=step,
            next_actions=("stop",) if step == "stop" else (),
            repeated=finding.repeated,
            gate=decision if finding.spin else None,
        )

    def _request(
        self,
        kind: ReflectionRequestKind,
        state: LoopState,
        event: ActionEvent,
        level: ReflectionLevel,
        **fields: Any,
    ) -> ReflectionRequestRecord:
        return findings_builder.request(
            kind=kind.value,
            loop_id=state.loop_id,
            trigger_event_id=event.event_id,
            level=level.value,
            occurred_at=event.occurred_at,
            stamp=self.stamp,
            **fields,
        )

    def _completion_request(
        self, state: LoopState, event: ActionEvent, level: ReflectionLevel
    ) -> ReflectionRequestRecord:
        """Seed 000 §3.7.2: a completed task searches its memories (4 KB)."""
        params = event.payload.params
        query = str(
            params.get("task")
            or params.get("user_input")
            or event.payload.action_name
            or event.payload.action_type
        )
        return self._request(
            ReflectionRequestKind.TASK_COMPLETION,
            state,
            event,
            level,
            memory_query=query,
            memory_budget_bytes=self.settings.task_completion_budget,
        )

    def _semantic_request(
        self, state: LoopState, event: ActionEvent, level: ReflectionLevel
    ) -> ReflectionRequestRecord:
        recent = state.window[-self.settings.logic_spin_threshold :]
        request_level = (
            level if level.at_least(ReflectionLevel.STANDARD) else ReflectionLevel.STANDARD
        )
        return self._request(
            ReflectionRequestKind.SEMANTIC_SPIN_CHECK,
            state,
            event,
            request_level,
            recent_actions=list(recent),
            prompt=texts.semantic_spin_prompt(recent),
        )

    def _reflection_request(
        self,
        state: LoopState,
        event: ActionEvent,
        level: ReflectionLevel,
        spin_reason: str | None,
    ) -> ReflectionRequestRecord:
        cfg = self.settings
        payload = event.payload
        reflection = {
            "event_id": event.event_id,
            "action_type": payload.action_type,
            "action_params": payload.params,
            "execution_time_ms": payload.duration_ms,
            "iteration_num": state.iteration,
            "success": payload.success,
            "error_message": payload.error_message,
            "environmental_impact": self._impact(event, spin_reason),
            "suggestions": self._suggestions(event, spin_reason),
            "reflection_level": level.value,
            "reflection_timestamp": event.occurred_at,
            "is_spinning": spin_reason is not None,
            "spin_reason": spin_reason,
        }
        cached = list(state.reflections)
        if cfg.reflection_cache_size:
            state.reflections.append({**reflection, "action_params": state.window[-1]["params"]})
            del state.reflections[: -cfg.reflection_cache_size]
        return self._request(
            ReflectionRequestKind.ACTION_REFLECTION,
            state,
            event,
            level,
            reflection=reflection,
            recent_actions=list(state.window),
            recent_reflections=cached,
            memory_query=memory_query(
                payload.action_type, not payload.failed, payload.error_message
            ),
            memory_budget_bytes=memory_budget_bytes(
                level,
                standard=cfg.memory_budget_standard,
                deep=cfg.memory_budget_deep,
                critical=cfg.memory_budget_critical,
            ),
        )

    def _impact(self, event: ActionEvent, spin_reason: str | None) -> dict[str, Any]:
        payload = event.payload
        usage = dict(payload.resource_usage)
        if payload.duration_ms is not None:
            usage.setdefault("duration_ms", payload.duration_ms)
        negative = [f"action failed: {payload.error_message or ''}"] if payload.failed else []
        if spin_reason:
            negative.append(spin_reason)
        return {
            "state_changes": ["loop terminated" if payload.terminated else "loop continued"],
            "resource_usage": usage,
            "side_effects": list(payload.side_effects),
            "positive_effects": ["action succeeded"] if payload.success is True else [],
            "negative_effects": negative,
        }

    def _suggestions(self, event: ActionEvent, spin_reason: str | None) -> list[str]:
        lang = self.settings.language
        payload = event.payload
        if payload.failed:
            return list(texts.failure_suggestions(lang, payload.action_type, payload.error_message))
        if spin_reason:
            return list(texts.LAYER1_SUGGESTIONS[lang])
        return []


def _with_step(text: str, language: str, step: str | None) -> str:
    """``text`` with the ladder step's sentence after it (the first warning has none)."""
    sentence = step_text(language, step)
    return f"{text.rstrip()}\n{sentence}" if sentence else text


def _edit(event: ActionEvent) -> dict[str, Any] | None:
    edit = event.payload.edit
    return None if edit is None else edit_record(edit)
