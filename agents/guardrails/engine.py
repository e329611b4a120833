"""The guardrail engine (seed 003 section 6): a completion in, a rerun decision out.

Pure and deterministic like the loop monitor: state in, state out, no clock.
Order of the decision (seed 003, "Rerun Decision Engine"):

1. alignment >= 0.75 and drift <= 0.25      -> finalize (thresholds met)
2. a bias tag flagged >= 3 times            -> finalize, action ``halt_loop``
3. reruns >= max_reruns, not overridden     -> finalize (rerun limit)
4. fatigue >= 0.5, not overridden           -> finalize (reflection fatigue)
5. otherwise                                -> rerun as ``<family>_r<n+1>``
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from loopwarden.agents import findings
from loopwarden.agents.guardrails.bias import detect_bias_repetition
from loopwarden.agents.guardrails.fatigue import calculate_fatigue
from loopwarden.agents.guardrails.limits import enforce_rerun_limit
from loopwarden.agents.guardrails.state import FamilyState
from loopwarden.agents.guardrails.trace import trace_entry, trigger_detail
from loopwarden.agents.provenance import guardrails_stamp
from loopwarden.schemas.completions import GuardrailOverride, LoopCompletion
from loopwarden.schemas.families import family_of, rerun_index, rerun_loop_id
from loopwarden.schemas.ids import derived_id
from loopwarden.schemas.outputs import HEADER, JsonObject, RerunDecisionRecord, WarningRecord
from loopwarden.settings import GuardrailSettings

Output = JsonObject
"""A reply of the seed's guardrails API (its shapes: ``agents/guardrails/openapi.py``)."""


def iso(ts: float) -> str:
    """Epoch seconds as the seed's ISO-8601 UTC timestamp."""
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")


@dataclass(slots=True)
class GuardrailOutcome:
    """What one completion produced: the seed's response, a decision event, warnings."""

    result: Output
    decision: RerunDecisionRecord
    warnings: list[WarningRecord] = field(default_factory=list)


class GuardrailEngine:
    """Applies loop completions and overrides to a family's state."""

    def __init__(
        self, settings: GuardrailSettings | None = None, stamp: JsonObject | None = None
    ) -> None:
        self.settings = settings or GuardrailSettings()
        self.stamp = stamp or guardrails_stamp(self.settings, float("inf"), 256 * 1024)

    def unscheduled(
        self,
        state: FamilyState | None,
        loop_id: str,
        max_reruns: int | None = None,
        override: bool = False,
    ) -> str | None:
        """Why a completion of ``loop_id`` cannot be applied (None when it can): a rerun
        beyond the family's limit was never scheduled, unless the limit is overridden."""
        index = rerun_index(loop_id)
        if override or (state is not None and state.override_max_reruns):
            return None
        if max_reruns is not None:
            limit = min(max_reruns, self.settings.max_reruns_ceiling)
        elif state is not None:
            limit = self._max_reruns(state)
        else:
            limit = self.settings.max_reruns
        if index <= limit:
            return None
        family = family_of(loop_id)
        last = rerun_loop_id(family, limit) if limit else family
        return (
            f"{loop_id} was never scheduled: family {family} allows {limit} rerun(s), the "
            f"last is {last}; override the rerun limit to go further"
        )

    def complete(self, state: FamilyState, event: LoopCompletion) -> GuardrailOutcome:
        """Process a completion: fatigue, limits, bias echo, reasoning, decision."""
        cfg = self.settings
        p = event.payload
        loop_id, family = event.loop_id, state.family
        index = rerun_index(loop_id)
        if p.max_reruns is not None:
            state.max_reruns = min(p.max_reruns, cfg.max_reruns_ceiling)
        max_reruns = self._max_reruns(state)
        override_fatigue = p.override_fatigue or state.override_fatigue
        override_max = p.override_max_reruns or state.override_max_reruns
        override_by = p.override_by or state.overridden_by
        total_reruns = max(index, state.max_index)

        fatigue = calculate_fatigue(
            p.alignment_score,
            p.drift_score,
            self._previous_scores(state, loop_id, index),
            state.fatigue,
            cfg,
        )
        bias = detect_bias_repetition(
            state.bias_history, [t.tag for t in p.bias_tags], cfg.bias_repetition_threshold
        )
        limit = enforce_rerun_limit(
            total_reruns, max_reruns, override=override_max, override_by=override_by
        )
        fatigue_forced = (
            fatigue.threshold_exceeded or fatigue.reflection_fatigue >= cfg.fatigue_threshold
        ) and not override_fatigue

        triggers = []
        if p.alignment_score < cfg.alignment_threshold:
            triggers.append("alignment")
        if p.drift_score > cfg.drift_threshold:
            triggers.append("drift")
        decision: Output = {
            "decision": "finalize",
            "original_loop_id": loop_id,
            "new_loop_id": None,
            "rerun_reason": None,
            "finalize_reason": None,
            "rerun_number": None,
            "rerun_count": total_reruns,
            "max_reruns": max_reruns,
            "rerun_trigger": triggers,
            "force_finalize": False,
            "action": None,
            "overridden_by": None,
        }
        warnings: list[WarningRecord] = []
        if not triggers:
            decision["finalize_reason"] = "thresholds_met"
        elif bias.bias_echo:
            decision.update(finalize_reason="bias_echo", force_finalize=True, action="halt_loop")
            warnings.append(
                self._warning(
                    event,
                    "bias_echo",
                    "critical",
                    total_reruns,
                    f"bias echo: {', '.join(bias.repeated_tags)} flagged "
                    f">= {bias.threshold} times; halting the loop",
                )
            )
        elif limit.force_finalize:
            decision.update(finalize_reason="rerun_limit_reached", force_finalize=True)
            warnings.append(
                self._warning(
                    event,
                    "rerun_limit_reached",
                    "standard",
                    total_reruns,
                    f"rerun limit reached: {total_reruns} of {max_reruns} reruns used; finalizing",
                )
            )
        elif fatigue_forced:
            decision.update(finalize_reason="reflection_fatigue", force_finalize=True)
            warnings.append(
                self._warning(
                    event,
                    "reflection_fatigue",
                    "standard",
                    total_reruns,
                    f"reflection fatigue {fatigue.reflection_fatigue:.2f} >= "
                    f"{fatigue.critical_threshold:.2f} after reruns without "
                    "improvement; finalizing",
                )
            )
        else:
            number = total_reruns + 1
            decision.update(
                decision="rerun",
                new_loop_id=rerun_loop_id(family, number),
                rerun_reason="alignment_threshold_not_met"
                if "alignment" in triggers
                else "drift_threshold_exceeded",
                rerun_number=number,
                rerun_count=number,
            )
            overridden = [
                name
                for name, passed in (
                    ("max_reruns", limit.overridden),
                    (
                        "fatigue",
                        override_fatigue
                        and (
                            fatigue.threshold_exceeded
                            or fatigue.reflection_fatigue >= cfg.fatigue_threshold
                        ),
                    ),
                )
                if passed
            ]
            if overridden:
                decision["overridden_by"] = override_by
            state.max_index = number
            state.reasoning = {
                "rerun_trigger": triggers,
                "rerun_reason": decision["rerun_reason"],
                "rerun_reason_detail": trigger_detail(
                    p.alignment_score, p.drift_score, self.settings
                ),
                "timestamp": iso(event.occurred_at),
                "reflection_persona": p.reflection_persona,
                **({"overridden_by": override_by} if overridden else {}),
            }

        state.fatigue = fatigue.reflection_fatigue
        state.max_index = max(state.max_index, total_reruns)
        state.last_scores = [p.alignment_score, p.drift_score]
        reflection_result = {
            "alignment_score": p.alignment_score,
            "drift_score": p.drift_score,
            "summary_valid": p.summary_valid,
            "reflection_persona": p.reflection_persona,
            "bias_echo": bias.bias_echo,
            "repeated_tags": bias.repeated_tags,
            "repetition_counts": bias.repetition_counts,
            "reflection_fatigue": fatigue.reflection_fatigue,
            "fatigue_increased": fatigue.fatigue_increased,
            "improvement_detected": fatigue.improvement_detected,
        }
        persona, timestamp = p.orchestrator_persona or p.reflection_persona, iso(event.occurred_at)
        result = {
            "status": "success",
            "loop_id": loop_id,
            "family_id": family,
            "reflection_result": reflection_result,
            "decision_result": decision,
            "orchestrator_persona": persona,
            "timestamp": timestamp,
        }
        state.put_trace(
            loop_id,
            trace_entry(
                self.settings,
                event,
                index,
                decision,
                fatigue.fatigue_increased,
                bias.bias_echo,
                bias.repeated_tags,
                override_by,
                fatigue.reflection_fatigue,
            ),
        )
        state.remember(event.event_id, result)
        decision_event: RerunDecisionRecord = {
            **HEADER,
            "type": "rerun_decision",
            "decision_id": derived_id("rerun_decision", family, event.event_id),
            "trigger_event_id": event.event_id,
            "occurred_at": event.occurred_at,
            "produced_by": self.stamp,
            "status": "success",
            "loop_id": loop_id,
            "family_id": family,
            "reflection_result": reflection_result,
            "decision_result": decision,
            "orchestrator_persona": persona,
            "timestamp": timestamp,
        }
        return GuardrailOutcome(result, decision_event, warnings)

    def override(self, state: FamilyState, event: GuardrailOverride) -> Output:
        """Make a family's overrides sticky; the seed's override response."""
        p = event.payload
        state.override_fatigue = p.override_fatigue
        state.override_max_reruns = p.override_max_reruns
        state.overridden_by = p.override_by
        state.override_reason = p.override_reason
        trace = state.traces.get(event.loop_id)
        if trace is not None:
            trace["overridden_by"] = p.override_by
        response = {
            "status": "success",
            "loop_id": event.loop_id,
            "override_fatigue": p.override_fatigue,
            "override_max_reruns": p.override_max_reruns,
            "overridden_by": p.override_by,
            "override_reason": p.override_reason,
        }
        state.remember(event.event_id, response)
        return response

    def status(self, state: FamilyState, loop_id: str) -> Output | None:
        """The seed's guardrails status for ``loop_id``; None when the loop is unknown.

        A loop with reflections but no completion yet reports the family's figures
        and its reflections, with no trace.
        """
        trace = state.traces.get(loop_id)
        if trace is None and loop_id not in state.reflections:
            return None
        seen = trace or {}
        max_reruns = self._max_reruns(state)
        return {
            "status": "success",
            "guardrails_status": {
                "loop_id": loop_id,
                "family_id": state.family,
                "rerun_count": state.max_index,
                "max_reruns": max_reruns,
                "rerun_limit_reached": state.max_index >= max_reruns,
                "bias_echo": seen.get("bias_echo", False),
                "reflection_fatigue": state.fatigue,
                "fatigue_threshold_exceeded": (
                    state.fatigue >= self.settings.fatigue_critical_threshold
                ),
                "force_finalize": seen.get("force_finalize", False),
                "rerun_reason": seen.get("rerun_reason"),
                "rerun_trigger": seen.get("rerun_trigger"),
                "alignment_score": seen.get("alignment_score"),
                "drift_score": seen.get("drift_score"),
                "summary_valid": seen.get("summary_valid"),
                "reflection_persona": seen.get("reflection_persona"),
                "overrides": {
                    "override_fatigue": state.override_fatigue,
                    "override_max_reruns": state.override_max_reruns,
                    "overridden_by": state.overridden_by,
                    "override_reason": state.override_reason,
                },
                "rerun_reasoning": state.reasoning,
                "recent_reflections": state.reflections.get(loop_id, []),
                "trace": trace,
                "family_traces": list(state.traces.values()),
            },
        }

    # -- helpers ---------------------------------------------------------------------------

    def _max_reruns(self, state: FamilyState) -> int:
        return state.max_reruns if state.max_reruns is not None else self.settings.max_reruns

    def _previous_scores(
        self, state: FamilyState, loop_id: str, index: int
    ) -> tuple[float, float] | None:
        if index == 0:
            return None
        previous = state.traces.get(
            rerun_loop_id(state.family, index - 1) if index > 1 else state.family
        )
        if previous is not None and previous.get("alignment_score") is not None:
            return previous["alignment_score"], previous["drift_score"]
        if state.last_scores is not None:
            return state.last_scores[0], state.last_scores[1]
        return None

    def _warning(
        self, event: LoopCompletion, kind: str, level: str, reruns: int, reason: str
    ) -> WarningRecord:
        text = (
            f"⛔ [GUARDRAIL] Loop '{event.loop_id}' is finalized: {reason}.\n"
            "Stop rerunning; report the best result so far and what blocked progress.\n"
        )
        return findings.warning(
            kind=kind,
            loop_id=event.loop_id,
            trigger_event_id=event.event_id,
            level=level,
            reason=reason,
            next_actions=["finalize"],
            event_ids=[event.event_id],
            action_type="loop_complete",
            iteration=reruns,
            timeline_message=text,
            occurred_at=event.occurred_at,
            stamp=self.stamp,
        )
