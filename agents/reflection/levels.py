"""The reflection trigger decision tree (seed 000 section 1.2 and its diagram).

In order of priority:

1. reflection disabled          -> None
2. operator/action override     -> that level (an override of None is no override)
3. action failed                -> Critical (no silent failures)
4. simple action                -> Minimal
5. iteration > threshold (5)    -> Standard when spinning (Layer 1), else Minimal
6. otherwise                    -> Minimal
"""

from __future__ import annotations

from loopwarden.schemas.levels import ReflectionLevel


def decide_reflection_level(
    *,
    enabled: bool,
    override: ReflectionLevel | None,
    failed: bool,
    simple: bool,
    iteration: int,
    spinning: bool,
    iteration_threshold: int = 5,
) -> ReflectionLevel:
    """Return the reflection level for one action, exactly as the seed's tree."""
    if not enabled:
        return ReflectionLevel.NONE
    if override is not None and override is not ReflectionLevel.NONE:
        return override
    if failed:
        return ReflectionLevel.CRITICAL
    if simple:
        return ReflectionLevel.MINIMAL
    if iteration > iteration_threshold:
        return ReflectionLevel.STANDARD if spinning else ReflectionLevel.MINIMAL
    return ReflectionLevel.MINIMAL


def memory_budget_bytes(
    level: ReflectionLevel, *, standard: int = 2048, deep: int = 5120, critical: int = 10240
) -> int:
    """Stage 3: bytes of memory context a reflection at ``level`` may use."""
    if level is ReflectionLevel.STANDARD:
        return standard
    if level is ReflectionLevel.DEEP:
        return deep
    if level is ReflectionLevel.CRITICAL:
        return critical
    return 0


def memory_query(action_type: str, success: bool, error_message: str | None) -> str:
    """Stage 3: the seed's memory search query for a reflection."""
    query = f"action '{action_type}' execution analysis failure success pattern"
    if not success and error_message:
        query += " " + error_message
    return query
