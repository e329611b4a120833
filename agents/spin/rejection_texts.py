"""Texts of :mod:`~loopwarden.agents.spin.repeated_rejection`, in English and Chinese."""

from __future__ import annotations


def rejection_reason(language: str, count: int, action_type: str) -> str:
    """One tool refused ``count`` calls with the same error."""
    if language == "zh":
        return f"{action_type} 以相同的错误拒绝了 {count} 次调用"
    return f"{action_type} refused {count} calls with the same error"


def rejection_suggestion(language: str) -> str:
    """One concrete next step for a call refused again and again."""
    if language == "zh":
        return "调用在生效前就被拒绝了：逐字阅读错误原因，先修正它指出的地方，再调用"
    return (
        "The call was refused before it had any effect: read the reason word for word and "
        "fix what it names before you call again"
    )
