"""Variable slots: a path stored with ``{slot}`` where the task's own values were.

Runs of one task rarely repeat the same arguments, so a learned path keeps the
values that came from the task description as slots: the description "search
iPhone 15 on Taobao and order it" and an input step ``{"text": "iPhone 15"}``
become the template "search {text} on Taobao and order it" and the step
``{"text": "{text}"}``. A new description that matches the template fills the
slots (``{"text": "AirPods"}``) and so the steps (seed 004 §3.4 "variable slots").
A slot is named after the parameter that carried its value. When the step wrote
the value in another case than the description (``taobao`` for "Taobao"), the
step keeps that as ``{app!lower}`` (or ``!upper``), so a filled slot is written
the way the agent wrote it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from loopwarden.agents.experience.steps import Step

_SLOT = re.compile(r"\{([a-z][a-z0-9_]*)(?:!(lower|upper))?\}")
_CASES = {"lower": str.lower, "upper": str.upper}
_NAME = re.compile(r"[^a-z0-9_]+")
MIN_SLOT_CHARS = 2
CONTROL_KEYS = frozenset({"target", "selector", "element", "xpath", "id", "button"})
"""Parameters naming the control acted on (a button called "search"), never a slot."""


def _as_is(token: str, _match: re.Match[str]) -> str:
    """A replacement taken as it is (no backslash escapes)."""
    return token


def _slot_name(key: str, taken: set[str]) -> str:
    base = _NAME.sub("_", key.lower()).strip("_") or "value"
    if not base[0].isalpha():
        base = f"v_{base}"
    name, n = base, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    return name


def _string_params(params: Any, key: str = "value") -> Iterable[tuple[str, str]]:
    if isinstance(params, dict):
        for k, v in params.items():
            yield from _string_params(v, str(k))
    elif isinstance(params, list):
        for v in params:
            yield from _string_params(v, key)
    elif isinstance(params, str):
        yield key, params


def _occurs(value: str, text: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(value)}(?!\w)", text, re.IGNORECASE) is not None


def _replace(text: str, tokens: dict[str, str]) -> str:
    """``text`` with each value (any case, whole words) replaced by its token."""
    # longest values first, so "iPhone 15 Pro" is not cut by "iPhone 15"
    for value, token in sorted(tokens.items(), key=lambda kv: -len(kv[0])):
        pattern = rf"(?<!\w){re.escape(value)}(?!\w)"
        text = re.sub(pattern, functools.partial(_as_is, token), text, flags=re.I)
    return text


def _step_token(name: str, value: str, description: str) -> str:
    """``{name}``, or ``{name!lower}``/``{name!upper}`` when the step wrote the value in
    that case and the description did not."""
    found = re.search(rf"(?<!\w){re.escape(value)}(?!\w)", description, re.IGNORECASE)
    written = found.group(0) if found else value
    if written != value and value == value.lower():
        return "{" + name + "!lower}"
    if written != value and value == value.upper():
        return "{" + name + "!upper}"
    return "{" + name + "}"


def _map_strings(value: Any, change: Any) -> Any:
    if isinstance(value, dict):
        return {k: _map_strings(v, change) for k, v in value.items()}
    if isinstance(value, list):
        return [_map_strings(v, change) for v in value]
    if isinstance(value, str):
        return change(value)
    return value


def abstract(description: str, steps: list[Step]) -> tuple[str, list[Step], dict[str, str]]:
    """(template, templated steps, slot values): every string parameter value that also
    appears in the description (as whole words) becomes a slot everywhere it occurs."""
    by_value: dict[str, str] = {}  # casefolded value → slot name
    shown: dict[str, str] = {}  # slot name → the value as the task wrote it
    for step in steps:
        for key, value in _string_params(step.get("params") or {}):
            value = value.strip()
            folded = value.casefold()
            if key.lower() in CONTROL_KEYS or len(value) < MIN_SLOT_CHARS:
                continue
            if folded in by_value or "{" in value:
                continue
            if _occurs(value, description):
                name = _slot_name(key, set(shown))
                by_value[folded] = name
                shown[name] = value
    if not shown:
        return description, [dict(step) for step in steps], {}
    template = _replace(description, {value: "{" + name + "}" for name, value in shown.items()})
    tokens = {value: _step_token(name, value, description) for name, value in shown.items()}
    templated = []
    for step in steps:
        out = dict(step)
        out["params"] = _map_strings(step.get("params") or {}, lambda s: _replace(s, tokens))
        if step.get("target"):
            out["target"] = _replace(step["target"], tokens)
        templated.append(out)
    return template, templated, shown


def slots_in(template: str) -> list[str]:
    """The slot names of a template, in order, once each."""
    return list(dict.fromkeys(name for name, _ in _SLOT.findall(template)))


@lru_cache(maxsize=4096)
def _template_regex(template: str) -> re.Pattern[str]:
    parts, last = [], 0
    for match in _SLOT.finditer(template):
        parts.append(_literal(template[last : match.start()]))
        name = match.group(1)
        # a slot named twice matches the same text twice
        parts.append(f"(?P={name})" if f"(?P<{name}>" in "".join(parts) else f"(?P<{name}>.+?)")
        last = match.end()
    parts.append(_literal(template[last:]))
    return re.compile(r"\s*" + "".join(parts) + r"\s*[.!?。！？]*\s*", re.IGNORECASE | re.DOTALL)


def _literal(text: str) -> str:
    return r"\s+".join(re.escape(word) for word in text.split(" ")) if text else ""


def match_template(template: str, description: str) -> dict[str, str] | None:
    """The slot values when ``description`` has the template's shape, else None."""
    if not slots_in(template):
        return None
    found = _template_regex(template).fullmatch(description.strip())
    if found is None:
        return None
    values = {name: value.strip() for name, value in found.groupdict().items()}
    return values if all(values.values()) else None


def fill(steps: list[Step], values: dict[str, str]) -> list[Step]:
    """The steps with their slots filled from ``values``; each step lists its open slots."""

    def value_of(match: re.Match[str]) -> str:
        value = values.get(match.group(1))
        if value is None:
            return match.group(0)
        return _CASES[match.group(2)](value) if match.group(2) else value

    def put(text: str) -> str:
        return _SLOT.sub(value_of, text)

    filled = []
    for step in steps:
        out = dict(step)
        out["params"] = _map_strings(step.get("params") or {}, put)
        if step.get("target"):
            out["target"] = put(step["target"])
        written = repr(step.get("params")) + (step.get("target") or "")
        out["open_slots"] = sorted({name for name, _ in _SLOT.findall(written)} - set(values))
        filled.append(out)
    return filled
