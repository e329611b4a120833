"""What repeated, as facts and as the one text every repetition warning is written from.

A warning names the call that repeated (its tool and the part of its arguments that
identifies it: the command, the query, the path — events are redacted before any
detector sees them), quotes the line that repeats (for a failure the line that says
why, :func:`~loopwarden.agents.spin.failure_line.failure_line`; for a result its
telling line, not a banner or a table header; a short result whole), says who (the
speaker by its ``agent``), how often and since which action, and one next step. The
same facts travel as the warning's ``repeated`` field (:class:`~loopwarden.schemas.
warnings.Repeated`), so the JSON, the page and the text never disagree.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from loopwarden.agents.spin.detector import Finding, Observation

QUOTE_CHARS = 160
CALL_CHARS = 100
IDENTIFYING = ("command", "cmd", "query", "sql", "q", "url", "path", "file", "filename", "name")
"""Argument names whose value identifies a call, in order of preference."""
SHORT_LINES = 3
"""A result of at most this many lines (and :data:`QUOTE_CHARS`) is quoted whole."""
_BANNER = re.compile(r"^[\W_]+$|^[=\-*#~_ ]{3,}.*[=\-*#~_]{3,}$")
"""A line of punctuation, or text between rules (``==== test session starts ====``)."""
_HEADER_WORD = re.compile(r"^[A-Z][A-Z0-9_\-/()%]*$")
_RULED = re.compile(r"^[=\-*#~_]{3,}\s+(\S.*?)\s+[=\-*#~_]{3,}$")
"""A summary between rules, as a test run ends (``==== 1 failed in 0.42s ====``)."""


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def call_label(payload: Any) -> str:
    """The part of a call that identifies it: its identifying argument (the command,
    the query, the path…), else its first arguments, else its ``action_name``."""
    params = payload.params or {}
    for name in IDENTIFYING:
        value = params.get(name)
        if isinstance(value, str) and value.strip():
            return _short(value, CALL_CHARS)
    shown = [
        f"{name}={value!r}" if isinstance(value, str) else f"{name}={value}"
        for name, value in params.items()
        if isinstance(value, str | int | float | bool) and name not in ("source", "step")
    ][:3]
    if shown:
        return _short(", ".join(shown), CALL_CHARS)
    return _short(payload.action_name or "", CALL_CHARS)


def _header(line: str) -> bool:
    words = line.split()
    return len(words) >= 2 and all(_HEADER_WORD.match(word) for word in words)


def telling_line(text: str | None) -> str:
    """What to quote of a result: a short one whole (lines joined by `` · ``), else the
    summary it ends with between rules (``1 failed in 0.42s``), else its first line that
    is not a banner or a table header."""
    lines = [" ".join(line.split()) for line in (text or "").splitlines() if line.strip()]
    if not lines:
        return ""
    whole = " · ".join(lines)
    if len(lines) <= SHORT_LINES and len(whole) <= QUOTE_CHARS:
        return whole
    summary = _RULED.match(lines[-1])
    if summary:
        return _short(summary.group(1), QUOTE_CHARS)
    for line in lines:
        if not _BANNER.match(line) and not _header(line):
            return _short(line, QUOTE_CHARS)
    return _short(lines[0], QUOTE_CHARS)


def repeated(
    how: str,
    payload: Any,
    count: int,
    since: int,
    line: str,
    call: str | None = None,
) -> dict[str, Any]:
    """The ``repeated`` facts of a warning (shaped as :class:`Repeated`)."""
    return {
        "how": how,
        "tool": payload.action_type,
        "call": (call if call is not None else call_label(payload)) or None,
        "line": _short(line, QUOTE_CHARS) or None,
        "count": count,
        "since": since,
        "agent": payload.agent,
    }


def _who(agent: str | None) -> tuple[str, str]:
    """(subject with its verb, possessive): ("you have", "your") or ("Planner has",
    "Planner's")."""
    return (f"{agent} has", f"{agent}'s") if agent else ("you have", "your")


def headline(facts: dict[str, Any], language: str) -> str:
    """The first line of a repetition warning, from its facts."""
    tool, call, line = facts["tool"], facts["call"], (facts["line"] or "").rstrip(".")
    count, since, how = facts["count"], facts["since"], facts["how"]
    if language == "zh":
        return _headline_zh(facts)
    subject, possessive = _who(facts["agent"])
    called = f"{tool} (`{call}`)" if call else tool
    quoted = f": “{line}”" if line else ""
    if how == "said":
        said = f"said the same thing {count} times{quoted}."
        return f"⚠️ [LOOP] Since action {since}, {subject} {said}"
    if how == "refused":
        target = f"{possessive} call (`{call}`)" if call else f"{possessive} call"
        return (
            f"⚠️ [LOOP] Since action {since}, {tool} has refused {target} {count} times for the "
            f"same reason{quoted}."
        )
    if how == "very_same_call":
        return (
            f"⚠️ [LOOP] Since action {since} {subject} made the very same call to {called} "
            f"{count} times (no result was published to compare)."
        )
    if how == "same_failure":
        return (
            f"⚠️ [LOOP] Since action {since} {subject} called {called} {count} times and it "
            f"failed the same way each time{quoted}."
        )
    return (
        f"⚠️ [LOOP] Since action {since} {subject} called {called} {count} times and got the "
        f"same result each time{quoted}."
    )


def _headline_zh(facts: dict[str, Any]) -> str:
    tool, call, line = facts["tool"], facts["call"], facts["line"]
    count, since, how = facts["count"], facts["since"], facts["how"]
    who = facts["agent"] or "你"
    called = f"{tool}（`{call}`）" if call else tool
    quoted = f"：「{line}」" if line else ""
    if how == "said":
        return f"⚠️ [循环] 自第 {since} 步起，{who}已 {count} 次说了相同的话{quoted}。"
    if how == "refused":
        return f"⚠️ [循环] 自第 {since} 步起，{called} 已 {count} 次以相同的原因拒绝了调用{quoted}。"
    if how == "very_same_call":
        return f"⚠️ [循环] 自第 {since} 步起，{who}已 {count} 次完全相同地调用 {called}。"
    head = f"⚠️ [循环] 自第 {since} 步起，{who}已 {count} 次调用 {called}"
    if how == "same_failure":
        return f"{head}，每次以相同的方式失败{quoted}。"
    return f"{head}，每次得到相同的结果{quoted}。"


def timeline(facts: dict[str, Any], suggestion: str, language: str) -> str:
    """The text an agent reads: what repeated, then one next step."""
    stop = "。" if language == "zh" else "."
    return f"{headline(facts, language)}\n{suggestion}{stop}"


def repetition_finding(
    kind: str,
    seen: Observation,
    earlier: Sequence[Sequence[Any]],
    facts: dict[str, Any],
    reason: str,
    suggestion: str,
) -> Finding:
    """The finding of a repetition: ``earlier`` are the remembered items it repeats (each
    its event id first), the text written from ``facts`` with ``suggestion``."""
    return Finding(
        kind=kind,
        reason=reason,
        suggestions=(suggestion,),
        event_ids=(*(item[0] for item in earlier), seen.event.event_id),
        timeline_message=timeline(facts, suggestion, seen.settings.language),
        consecutive_count=facts["count"],
        repeated=facts,
    )
