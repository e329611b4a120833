"""Reflection fatigue (seed 003 section 4): reruns that do not improve tire the loop."""

from __future__ import annotations

from dataclasses import dataclass

from loopwarden.settings import GuardrailSettings


def improvement(current: float, previous: float, *, is_alignment: bool) -> float:
    """How much better ``current`` is: alignment should rise, drift should fall."""
    return current - previous if is_alignment else previous - current


@dataclass(frozen=True, slots=True)
class FatigueResult:
    """The seed's fatigue result."""

    reflection_fatigue: float
    previous_fatigue: float
    fatigue_increment: float
    fatigue_increased: bool
    improvement_detected: bool
    threshold_exceeded: bool
    critical_threshold: float

    @property
    def force_finalize(self) -> bool:
        """Fatigue at or above the critical threshold forces finalization."""
        return self.threshold_exceeded


def calculate_fatigue(
    alignment: float,
    drift: float,
    previous: tuple[float, float] | None,
    previous_fatigue: float,
    cfg: GuardrailSettings,
) -> FatigueResult:
    """The seed's ``calculate_fatigue_score``.

    ``previous`` is (alignment, drift) of the family's previous completed loop;
    an original loop (None) neither gains nor loses fatigue.
    """
    increment = 0.0
    increased = improved = False
    if previous is not None:
        prev_alignment, prev_drift = previous
        improved = (
            improvement(alignment, prev_alignment, is_alignment=True)
            >= cfg.fatigue_improvement_threshold
            or improvement(drift, prev_drift, is_alignment=False)
            >= cfg.fatigue_improvement_threshold
        )
        increment = -cfg.fatigue_decay_rate if improved else cfg.fatigue_base_increment
        increased = not improved
    fatigue = max(0.0, min(cfg.max_fatigue, previous_fatigue + increment))
    fatigue = round(fatigue, 10)  # 0.15 * 3 is 0.45, not 0.44999999999999996
    return FatigueResult(
        reflection_fatigue=fatigue,
        previous_fatigue=previous_fatigue,
        fatigue_increment=increment,
        fatigue_increased=increased,
        improvement_detected=improved,
        threshold_exceeded=fatigue >= cfg.fatigue_critical_threshold,
        critical_threshold=cfg.fatigue_critical_threshold,
    )
