"""Detection profiles: which detectors run, and whether the ladder shapes what is shown.

``seed`` is seed 000 exactly: Layer 1, Layer 3 and a warning on every failed
action, each on every action it fires. ``default`` is what the measurements in
``benchmarks/README.md`` support (see the README's "What is detected").
``detection.detectors`` and ``detection.ladder`` override a profile's choices.
"""

from __future__ import annotations

from dataclasses import dataclass

from loopwarden.settings import DetectionSettings


@dataclass(frozen=True, slots=True)
class Profile:
    """The detectors, in order, and the ladder switch."""

    detectors: tuple[str, ...]
    ladder: bool


PROFILES = {
    "seed": Profile(("action_type", "code_edit", "action_failed"), ladder=False),
    "default": Profile(
        ("repeated_call", "repeated_failure", "action_cycle", "code_edit"), ladder=True
    ),
}


def resolve(cfg: DetectionSettings) -> Profile:
    """The profile with ``detection.detectors`` / ``detection.ladder`` applied."""
    base = PROFILES[cfg.profile]
    return Profile(
        cfg.detectors if cfg.detectors is not None else base.detectors,
        cfg.ladder if cfg.ladder is not None else base.ladder,
    )
