"""Texts of the repetition detectors and of the ladder's steps, in English and Chinese.

The reasons (the warning's ``reason``, for operators) and the next steps, fitted to the
kind of repetition; the text an agent reads is written from what repeated
(:mod:`~loopwarden.agents.spin.what_repeated`), with these next steps.
"""

from __future__ import annotations


def outcome_reason(
    language: str, count: int, window: int, action_type: str, unknown: bool = False
) -> str:
    """Same call, same result, ``count`` times among the last ``window`` actions;
    ``unknown``: the very same call, its result not published."""
    if unknown:
        if language == "zh":
            return f"在最近 {window} 个动作中，对 {action_type} 的完全相同的调用出现了 {count} 次"
        return (
            f"the very same call to {action_type} was made {count} times in the last "
            f"{window} actions (no result was published to compare)"
        )
    if language == "zh":
        return f"在最近 {window} 个动作中，对 {action_type} 的相同调用 {count} 次得到相同的结果"
    return (
        f"the same call to {action_type} returned the same result {count} times "
        f"in the last {window} actions"
    )


def message_reason(language: str, count: int, action_type: str) -> str:
    """The same message, ``count`` times among the speaker's last turns."""
    if language == "zh":
        return f"{action_type} 在最近的发言中 {count} 次重复了相同的内容"
    return f"{action_type} said the same thing {count} times in its last turns"


def outcome_suggestion(language: str, failed: bool, unknown: bool = False) -> str:
    """One concrete next step for a repeated call."""
    if unknown:
        if language == "zh":
            return (
                "再次调用不会带来新信息：利用已有的结果，改变参数或换一种方法；"
                "如果被阻塞，请询问用户"
            )
        return (
            "Calling it again will not tell you more: use what it returned, change the "
            "arguments or try another way; if you are blocked, ask the user"
        )
    if language == "zh":
        if failed:
            return "不要再用相同的参数重试：先读错误信息，改变参数或换一种方法"
        return "这个结果你已经有了：利用它，读取另一个区域或采取行动；如果被阻塞，请询问用户"
    if failed:
        return (
            "Do not retry it with the same arguments: read the error, then change the "
            "arguments or try another way"
        )
    return (
        "You already have this result: use it, look at a different region or act on it; "
        "if you are blocked, ask the user"
    )


def message_suggestion(language: str) -> str:
    """One concrete next step for a repeated message."""
    if language == "zh":
        return "重复请求没有带来进展：换一个方法、换一个对象，或说明阻塞你的原因"
    return (
        "Repeating the request has not moved anything: change the approach or the target, "
        "or say what blocks you"
    )


STEP_TEXTS: dict[str, dict[str, str]] = {
    "en": {
        "escalate": "This is the second warning for this loop: change course now.",
        "final": (
            "FINAL WARNING: do something different now; if the repetition goes on, you "
            "will be told to stop."
        ),
        "stop": (
            "STOP NOW: you are still repeating after three warnings. Do not call the tool "
            "again; report what you have and what blocks you."
        ),
    },
    "zh": {
        "escalate": "这是对这个循环的第二次警告：现在就改变做法。",
        "final": "最后警告：现在就换一种做法；如果继续重复，你将被要求停止。",
        "stop": "立即停止：三次警告后你仍在重复。不要再调用工具；报告你已有的结果和阻塞你的原因。",
    },
}


def step_text(language: str, step: str | None) -> str:
    """The sentence a ladder step adds to a warning's text ("" for the first warning)."""
    return STEP_TEXTS.get(language, STEP_TEXTS["en"]).get(step or "", "")
