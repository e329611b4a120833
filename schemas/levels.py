"""Reflection levels (seed 000 section 1.1)."""

from __future__ import annotations

from enum import StrEnum


class ReflectionLevel(StrEnum):
    """How hard to reflect on an action; ordered None < Minimal < ... < Critical."""

    NONE = "none"
    MINIMAL = "minimal"
    STANDARD = "standard"
    DEEP = "deep"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        """0 for None up to 4 for Critical, as the seed's iota."""
        return _RANKS[self]

    def at_least(self, other: ReflectionLevel) -> bool:
        """True when this level is ``other`` or more intense."""
        return self.rank >= other.rank


_RANKS = {level: rank for rank, level in enumerate(ReflectionLevel)}
