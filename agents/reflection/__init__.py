"""Reflection: the level decision tree and the requests handed to the analyst."""

from loopwarden.agents.reflection.levels import (
    decide_reflection_level,
    memory_budget_bytes,
    memory_query,
)

__all__ = ["decide_reflection_level", "memory_budget_bytes", "memory_query"]
