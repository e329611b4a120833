"""Reflection guardrails (seed 003): fatigue, rerun limits, bias echo, rerun decisions."""

from loopwarden.agents.guardrails.bias import BiasEcho, detect_bias_repetition
from loopwarden.agents.guardrails.engine import GuardrailEngine, GuardrailOutcome
from loopwarden.agents.guardrails.fatigue import FatigueResult, calculate_fatigue, improvement
from loopwarden.agents.guardrails.limits import RerunLimit, enforce_rerun_limit
from loopwarden.agents.guardrails.state import FamilyState
from loopwarden.schemas.families import family_of, rerun_index, rerun_loop_id

__all__ = [
    "BiasEcho",
    "FamilyState",
    "FatigueResult",
    "GuardrailEngine",
    "GuardrailOutcome",
    "RerunLimit",
    "calculate_fatigue",
    "detect_bias_repetition",
    "enforce_rerun_limit",
    "family_of",
    "improvement",
    "rerun_index",
    "rerun_loop_id",
]
