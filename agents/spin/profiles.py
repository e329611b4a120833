"""Detection profiles: which detectors run, and whether the ladder shapes what is shown.

``seed`` (the default) is seed 000 exactly: Layer 1, Layer 3 and a warning on every
failed action, each on every action it fires. ``patterns`` warns only on literal
no-progress patterns (same call and result, same call failing, cycles, Layer 3)
through the ladder: it almost never fires on healthy runs, and on the labelled
runs in ``benchmarks/README.md`` it almost never fires at all.
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
    "patterns": Profile(
        ("repeated_call", "repeated_failure", "action_cycle", "code_edit", "monologue"),
        ladder=True,
    ),
}


def resolve(cfg: DetectionSettings) -> Profile:
    """The profile with ``detection.detectors`` / ``detection.ladder`` applied."""
    base = PROFILES[cfg.profile]
    return Profile(
        cfg.detectors if cfg.detectors is not None else base.detectors,
        cfg.ladder if cfg.ladder is not None else base.ladder,
    )
