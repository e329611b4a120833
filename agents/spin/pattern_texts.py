"""Texts of the detectors beyond the seed's layers, in English and Chinese."""

from __future__ import annotations

from collections.abc import Sequence

NO_PROGRESS_SUGGESTIONS: dict[str, tuple[str, ...]] = {
    "en": (
        "Stop repeating calls whose result you already have",
        "Use the result you got: change the arguments or the approach",
        "If you are blocked, say what blocks you instead of retrying",
    ),
    "zh": (
        "不要重复已经得到结果的调用",
        "利用已得到的结果：改变参数或方法",
        "如果被阻塞，请说明原因而不是重试",
    ),
}

FAILURE_SUGGESTIONS: dict[str, tuple[str, ...]] = {
    "en": (
        "Read the error before retrying; the same call fails the same way",
        "Check the preconditions (paths, permissions, inputs, installed tools)",
        "Try another approach to the same goal",
    ),
    "zh": (
        "重试前先阅读错误信息；相同的调用会以相同方式失败",
        "检查前置条件（路径、权限、输入、已安装的工具）",
        "尝试用另一种方法达成同一目标",
    ),
}


MONOLOGUE_SUGGESTIONS: dict[str, tuple[str, ...]] = {
    "en": (
        "Act: call the tool that moves the task forward",
        "If you need information from the user, ask one precise question",
    ),
    "zh": ("行动：调用能推进任务的工具", "如果需要用户提供信息，请提出一个明确的问题"),
}


def monologue_reason(language: str, count: int) -> str:
    """``count`` message turns without a tool call."""
    if language == "zh":
        return f"连续 {count} 轮只有消息、没有调用工具"
    return f"{count} turns in a row without a tool call"


def empty_responses_reason(language: str, count: int) -> str:
    """``count`` empty message turns."""
    if language == "zh":
        return f"连续 {count} 次空回复"
    return f"{count} empty responses in a row"


def repeated_call_reason(language: str, count: int, action_type: str) -> str:
    """Same call, same result, ``count`` times in a row."""
    if language == "zh":
        return f"连续 {count} 次相同的调用 {action_type} 得到相同的结果"
    return f"the same call to {action_type} returned the same result {count} times in a row"


def repeated_failure_reason(language: str, count: int, action_type: str) -> str:
    """Same call failing ``count`` times in a row."""
    if language == "zh":
        return f"相同的调用 {action_type} 连续失败 {count} 次"
    return f"the same call to {action_type} failed {count} times in a row"


def failure_streak_reason(language: str, count: int) -> str:
    """``count`` failed actions in a row, of any kind."""
    if language == "zh":
        return f"连续 {count} 个 Action 失败"
    return f"{count} actions in a row failed"


def cycle_reason(language: str, period: int, repeats: int, action_types: Sequence[str]) -> str:
    """A cycle of ``period`` calls repeated ``repeats`` times."""
    steps = " → ".join(action_types)
    if language == "zh":
        return f"{period} 个调用的循环重复了 {repeats} 次：{steps}"
    return f"a cycle of {period} calls repeated {repeats} times: {steps}"


def no_progress_reason(language: str, calls: int, window: int) -> str:
    """Each of the last ``calls`` repeats a call (and result) seen in the last ``window``."""
    if language == "zh":
        return f"最近 {calls} 次调用都重复了最近 {window} 次中出现过的调用和结果"
    return f"each of the last {calls} calls repeats a call and result of the last {window}"


def pattern_timeline(
    language: str, action_type: str, reason: str, suggestions: Sequence[str]
) -> str:
    """The warning text: the SPIN DETECTED head of seed 000 §2.4 with this pattern's reason."""
    if language == "zh":
        text = f"⚠️ [SPIN DETECTED] 检测到 AI Agent 陷入循环\n\n**Action 类型**: {action_type}\n"
        text += f"**原因**: {reason}\n\n**建议**:\n"
    else:
        text = (
            f"⚠️ [SPIN DETECTED] The AI agent is stuck in a loop\n\n**Action type**: {action_type}\n"
        )
        text += f"**Reason**: {reason}\n\n**Suggestions**:\n"
    return text + "".join(f"{i}. {s}\n" for i, s in enumerate(suggestions, 1))
