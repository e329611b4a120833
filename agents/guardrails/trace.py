"""A completion's entry in its family's trace (seed 003 section 6), pure."""

from __future__ import annotations

from typing import Any

from loopwarden.schemas.completions import LoopCompletion
from loopwarden.schemas.families import family_of, rerun_loop_id
from loopwarden.settings import GuardrailSettings

Output = dict[str, Any]
"""A trace entry of the seed's guardrails status (its shape: ``LoopTrace``)."""


def trigger_detail(alignment: float, drift: float, cfg: GuardrailSettings) -> str:
    """Which of the seed's thresholds a completion missed, as the trace says it."""
    parts = []
    if alignment < cfg.alignment_threshold:
        parts.append(f"alignment {alignment:.2f} < {cfg.alignment_threshold:.2f}")
    if drift > cfg.drift_threshold:
        parts.append(f"drift {drift:.2f} > {cfg.drift_threshold:.2f}")
    return "Triggered by " + "; ".join(parts)


def trace_entry(
    cfg: GuardrailSettings,
    event: LoopCompletion,
    index: int,
    decision: Output,
    fatigue_increased: bool,
    bias_echo: bool,
    repeated: list[str],
    override_by: str | None,
    fatigue: float,
) -> Output:
    """The seed's trace entry of one completion and its decision."""
    p = event.payload
    family = family_of(event.loop_id)
    rerun_of = None
    if index == 1:
        rerun_of = family
    elif index > 1:
        rerun_of = rerun_loop_id(family, index - 1)
    reason = decision["rerun_reason"] or decision["finalize_reason"]
    return {
        "loop_id": event.loop_id,
        "status": "rerun_scheduled" if decision["decision"] == "rerun" else "finalized",
        "timestamp": event.occurred_at,
        "rerun_of": rerun_of,
        "rerun_depth": index,
        "rerun_count": decision["rerun_count"],
        "max_reruns": decision["max_reruns"],
        "bias_echo": bias_echo,
        "repeated_tags": repeated or None,
        "reflection_fatigue": fatigue,
        "fatigue_increased": fatigue_increased,
        "rerun_reason": reason,
        "rerun_reason_detail": trigger_detail(p.alignment_score, p.drift_score, cfg)
        if decision["rerun_trigger"]
        else None,
        "rerun_trigger": decision["rerun_trigger"] or None,
        "force_finalize": decision["force_finalize"],
        "overridden_by": decision["overridden_by"] or (override_by if override_by else None),
        "orchestrator_persona": p.orchestrator_persona,
        "reflection_persona": p.reflection_persona,
        "alignment_score": p.alignment_score,
        "drift_score": p.drift_score,
        "summary_valid": p.summary_valid,
        "decision": decision["decision"],
        "bias_tags": [t.model_dump() for t in p.bias_tags],
        "new_loop_id": decision["new_loop_id"],
    }
