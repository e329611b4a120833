"""Detection profiles: which detectors run, and whether the ladder shapes what is shown.

``gated`` (the default) runs every repetition rule as a proposer and shows a finding
only when the calibrated gate (:mod:`~loopwarden.agents.spin.gate`) scores its step
at ``detection.gate_threshold`` or more, through the ladder; it is measured
leave-one-kind-out over annotated real runs of ten agent kinds.
``loops`` warns when an agent repeats a call and gets the same result
again, or says the same thing again (:mod:`~loopwarden.agents.spin.repeated_outcome`,
:mod:`~loopwarden.agents.spin.repeated_message`) and on Layer 3 edit spins, through the
ladder; it was chosen by measuring against annotated loops in real agent runs
(``benchmarks/detection_quality.py``, table in ``benchmarks/README.md``).
``seed`` is seed 000 exactly: Layer 1, Layer 3 and a warning on every
failed action, each on every action it fires. ``patterns`` warns only on literal
no-progress patterns (same call and result, same call failing, cycles, Layer 3)
through the ladder: it almost never fires on healthy runs, and on the labelled
runs in ``benchmarks/README.md`` it almost never fires at all.
``detection.detectors``, ``detection.ladder`` and ``detection.gate`` override a profile's choices.
"""

from __future__ import annotations

from dataclasses import dataclass

from loopwarden.settings import DetectionSettings


@dataclass(frozen=True, slots=True)
class Profile:
    """The detectors, in order, and the ladder switch."""

    detectors: tuple[str, ...]
    ladder: bool
    gate: bool = False


PROPOSERS = (
    "repeated_rejection",
    "repeated_outcome",
    "repeated_message",
    "restated_message",
    "code_edit",
    "repeated_call",
    "repeated_failure",
    "failure_line_repeat",
    "action_cycle",
    "outcome_cycle",
    "failure_streak",
    "monologue",
    "no_progress",
)
"""The rules that propose in the gated profile: every repetition rule, none of the
seed's per-action ones (Layer 1 and a warning per failure) or the peers' rules. The
order is the order their texts are preferred in (the most specific first)."""

PROFILES = {
    "gated": Profile(PROPOSERS, ladder=True, gate=True),
    "loops": Profile(
        (
            "repeated_rejection",
            "repeated_outcome",
            "repeated_message",
            "restated_message",
            "code_edit",
        ),
        ladder=True,
    ),
    "seed": Profile(("action_type", "code_edit", "action_failed"), ladder=False),
    "patterns": Profile(
        ("repeated_call", "repeated_failure", "action_cycle", "code_edit", "monologue"),
        ladder=True,
    ),
    # the rules of the tools our users run, for comparison (agents/spin/reference.py)
    "openhands": Profile(("openhands_stuck",), ladder=False),
    "gemini-cli": Profile(("gemini_tool_loop", "gemini_content_loop"), ladder=False),
    "roo-code": Profile(("roo_repetition",), ladder=False),
}


def resolve(cfg: DetectionSettings) -> Profile:
    """The profile with ``detection.detectors`` / ``detection.ladder`` applied."""
    base = PROFILES[cfg.profile]
    return Profile(
        cfg.detectors if cfg.detectors is not None else base.detectors,
        cfg.ladder if cfg.ladder is not None else base.ladder,
        cfg.gate if cfg.gate is not None else base.gate,
    )
