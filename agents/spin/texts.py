"""Warning and prompt texts of seed 000, in English and in the seed's own Chinese.

``zh`` reproduces the seed's strings verbatim; ``en`` is their translation.
The language is ``detection.language`` (default ``en``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from loopwarden.schemas import codec

LAYER1_SUGGESTIONS: dict[str, tuple[str, ...]] = {
    "zh": ("尝试使用不同的 Action 类型", "检查任务目标是否明确", "考虑是否需要用户澄清"),
    "en": (
        "Try a different action type",
        "Check whether the task goal is clear",
        "Consider whether the user needs to clarify",
    ),
}

EDIT_SPIN_SUGGESTIONS: dict[str, tuple[str, ...]] = {
    "zh": (
        "数据/变量层面的调整",
        "算法/逻辑层面的重构",
        "接口/API 调用方式的改变",
        "使用不同的库或工具函数",
    ),
    "en": (
        "Adjust the data or variables",
        "Restructure the algorithm or logic",
        "Change how the interface/API is called",
        "Use a different library or helper function",
    ),
}


def layer1_reason(language: str, count: int, action_type: str) -> str:
    """Why Layer 1 fired (the seed logs this sentence)."""
    if language == "zh":
        return f"连续 {count} 次执行相同类型的 Action: {action_type}"
    return f"detected same action type spin: {count} consecutive actions of type {action_type}"


def spin_timeline(language: str, action_type: str, reason: str, suggestions: Sequence[str]) -> str:
    """The SPIN DETECTED timeline message (seed 000 section 2.4)."""
    if language == "zh":
        head = "⚠️ [SPIN DETECTED] 检测到 AI Agent 陷入循环\n\n"
        body = f"**Action 类型**: {action_type}\n**原因**: {reason}\n\n"
        title = "**建议**:\n"
    else:
        head = "⚠️ [SPIN DETECTED] The AI agent is stuck in a loop\n\n"
        body = f"**Action type**: {action_type}\n**Reason**: {reason}\n\n"
        title = "**Suggestions**:\n"
    text = head + body
    if suggestions:
        text += title + "".join(f"{i}. {s}\n" for i, s in enumerate(suggestions, 1))
    return text


def edit_spin_reason(language: str, start_line: int, end_line: int, count: int) -> str:
    """Why Layer 3 fired (seed 000 section 2.3.2)."""
    if language == "zh":
        return f"检测到在第 {start_line}-{end_line} 行附近连续 {count} 次小幅修改代码，可能陷入了修改循环"
    return (
        f"detected {count} consecutive small code edits around lines {start_line}-{end_line}; "
        "the agent may be stuck in an edit loop"
    )


def edit_spin_prompt(language: str, start_line: int, end_line: int, reason: str) -> str:
    """The targeted reflection prompt for a code-edit spin (seed 000 section 2.3.3)."""
    if language == "zh":
        return f"""【代码修改空转警告】

{reason}

请停下来进行反思，回答以下问题：

【问题1：改动价值】
本次修改第 {start_line}-{end_line} 行的目标是什么？与上几次修改相比，有什么新的价值或进展？

【问题2：备选路径】
如果不继续修改这几行代码，还有哪些其他解决方案？
请至少列出 3 个不同层面的策略：
- 数据/变量层面的调整
- 算法/逻辑层面的重构
- 接口/API 调用方式的改变
- 使用不同的库或工具函数

【问题3：搜索建议】
强烈建议在继续修改前，先执行以下搜索以寻找正确的代码模式...

【行动建议】
请选择收益最高、风险最低的一个策略，并说明理由。

不要再继续在同一位置反复尝试小幅修改！"""
    return f"""[CODE EDIT SPIN WARNING]

{reason}

Stop and reflect. Answer these questions:

[Question 1: Value of the change]
What is the goal of this edit to lines {start_line}-{end_line}? Compared with the last few edits, what new value or progress does it bring?

[Question 2: Alternative paths]
If you stop editing these lines, what other solutions are there?
List at least 3 strategies at different levels:
- Adjust the data or variables
- Restructure the algorithm or logic
- Change how the interface/API is called
- Use a different library or helper function

[Question 3: Search first]
Before editing again, search for the correct code pattern...

[Recommended action]
Choose the strategy with the highest benefit and lowest risk, and explain why.

Do not keep making small edits at the same place!"""


def failure_suggestions(language: str, action_type: str, error: str | None) -> tuple[str, ...]:
    """Deterministic recommendations for a failed action (before any AI analysis)."""
    detail = error or ("未知错误" if language == "zh" else "unknown error")
    if language == "zh":
        return (
            f"不要用相同参数重复执行 '{action_type}'，上次失败原因：{detail}",
            f"重试前检查 '{action_type}' 的前置条件（权限、路径、输入）",
            "考虑使用不同的 Action 类型或方法达成同一目标",
        )
    return (
        f"Do not repeat '{action_type}' with the same parameters; it failed with: {detail}",
        f"Check the preconditions of '{action_type}' (permissions, paths, inputs) before retrying",
        "Consider a different action type or approach to reach the same goal",
    )


def critical_timeline(action_type: str, error: str | None, suggestions: Sequence[str]) -> str:
    """The CRITICAL REFLECTION timeline message (seed 000 section 1.3, stage 4).

    The seed writes these lines in English for every language.
    """
    text = f"✗ [CRITICAL REFLECTION] Action '{action_type}' FAILED\n"
    if error:
        text += f"Error: {error}\n"
    if suggestions:
        text += "MANDATORY RECOMMENDATIONS FOR FUTURE ACTIONS:\n"
        text += "".join(f"{i}. {s}\n" for i, s in enumerate(suggestions, 1))
    return text


def semantic_spin_prompt(actions: Sequence[dict[str, Any]], timeline: str = "") -> str:
    """The Layer 2 analysis prompt (seed 000 section 2.2.2), in the seed's words."""
    parts = [
        "你是一个 AI Agent 行为分析专家。请分析以下 Action 执行历史，判断是否发生了 SPIN 情况。\n\n",
        "SPIN 的定义：AI Agent 反复做出相同或相似的决策，没有让任务得到推进。\n\n",
    ]
    for i, action in enumerate(actions, 1):
        parts.append(f"### 第 {i} 次执行 (迭代 {action.get('iteration')})\n")
        parts.append(f"- Action 类型: {action.get('action_type')}\n")
        parts.append(f"- Action 名称: {action.get('action_name') or ''}\n")
        parts.append("- Action 参数:\n")
        parts.append(codec.dumps(action.get("params") or {}).decode() + "\n")
        if action.get("error_message"):
            parts.append(f"- 错误: {action['error_message']}\n")
        parts.append("\n")
    if timeline:
        parts.append("## Timeline 上下文\n\n")
        parts.append(timeline)
    return "".join(parts)


def lesson_text(
    language: str,
    iteration: int,
    loop_id: str,
    change: str,
    status: str,
    terminated: bool,
    reason: str,
) -> str:
    """A failed or loop-ending action as a memory (seed 000 §3.7.1's contextual form)."""
    completed = "true" if terminated else "false"
    if language == "zh":
        return (
            f"ReAct迭代 {iteration}/{loop_id}: {change}\n任务状态: {status}\n"
            f"完成状态: {completed}\n原因: {reason}"
        )
    return (
        f"ReAct iteration {iteration}/{loop_id}: {change}\nTask status: {status}\n"
        f"Completed: {completed}\nReason: {reason}"
    )
