"""Bias echo (seed 003 section 3): the same bias flagged again and again halts the loop."""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BiasEcho:
    """The seed's ``detect_bias_repetition`` result."""

    bias_repetition: bool
    repeated_tags: list[str]
    repetition_counts: dict[str, int]
    threshold: int

    @property
    def bias_echo(self) -> bool:
        """Same as ``bias_repetition`` (the seed reports both)."""
        return self.bias_repetition

    @property
    def trigger(self) -> str | None:
        """``pessimist`` when an echo was found."""
        return "pessimist" if self.bias_repetition else None

    @property
    def action(self) -> str | None:
        """``halt_loop`` when an echo was found."""
        return "halt_loop" if self.bias_repetition else None


def detect_bias_repetition(
    history: MutableMapping[str, int], tags: Sequence[str], threshold: int = 3
) -> BiasEcho:
    """Count ``tags`` into ``history`` (occurrences per tag), then report tags at threshold.

    A tag repeated within one completion counts once, as one flag of that loop.
    """
    counts: dict[str, int] = {}
    repeated: list[str] = []
    for tag in dict.fromkeys(tags):
        history[tag] = history.get(tag, 0) + 1
        counts[tag] = history[tag]
        if history[tag] >= threshold:
            repeated.append(tag)
    return BiasEcho(bool(repeated), repeated, counts, threshold)
