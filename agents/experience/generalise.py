"""Generalisation (seed 004 §3.4): clusters of similar tasks → patterns with variable slots.

Successful experiences of one app and intent whose descriptions are similar
(cosine at or above ``experience.cluster_threshold``, greedy clustering over the
unit vectors) and whose cleaned paths have the same action types form a
cluster. Aligning the cluster's descriptions word by word keeps the words they
share and turns the words that vary into slots ("search {text} on Taobao and
order it"); a slot takes the name of the step parameter that carried its value.
The pattern (the seed's ExperienceGraph: pattern, common path, variable slots,
success case ids) is what Level 3 matching fills. Run by maintenance, not per
event.
"""

from __future__ import annotations

import difflib
from collections import Counter, defaultdict
from typing import Any

import numpy as np

from loopwarden.agents.experience.matching import Experience
from loopwarden.agents.experience.slots import fill, match_template
from loopwarden.schemas.ids import derived_id
from loopwarden.settings import ExperienceSettings

_SLOT = object()
_PUNCTUATION = ".!?。！？,，"


def _words(text: str) -> list[str]:
    return text.strip().rstrip(_PUNCTUATION).split()


def align(descriptions: list[str]) -> list[Any]:
    """Words shared by every description in order, with ``_SLOT`` where they differ."""
    pattern: list[Any] = _words(descriptions[0])
    for other in descriptions[1:]:
        theirs = _words(other)
        ours = [w.casefold() if w is not _SLOT else "\x00" for w in pattern]
        matcher = difflib.SequenceMatcher(None, ours, [w.casefold() for w in theirs], False)
        merged: list[Any] = []
        for op, i1, i2, _, _ in matcher.get_opcodes():
            if op == "equal":
                merged.extend(pattern[i1:i2])
            elif not merged or merged[-1] is not _SLOT:
                merged.append(_SLOT)
        pattern = merged
    return pattern


def _template(pattern: list[Any], names: list[str]) -> str:
    out, n = [], 0
    for word in pattern:
        if word is _SLOT:
            out.append("{" + names[n] + "}")
            n += 1
        else:
            out.append(word)
    return " ".join(out)


def pattern_of(cases: list[Experience]) -> dict[str, Any] | None:
    """The pattern a cluster of successful cases shares, or None (too little in common)."""
    pattern = align([case["task_description"] for case in cases])
    literal = sum(word is not _SLOT for word in pattern)
    slots = sum(word is _SLOT for word in pattern)
    if slots == 0 or literal < 2:
        return None
    provisional = [f"slot{i + 1}" for i in range(slots)]
    template = _template(pattern, provisional)
    votes: dict[str, Counter[str]] = defaultdict(Counter)
    for case in cases:
        values = match_template(template, case["task_description"])
        if values is None:
            return None
        by_value = {v.casefold(): name for name, v in (case.get("slots") or {}).items()}
        for slot, value in values.items():
            votes[slot][by_value.get(value.casefold(), slot)] += 1
    names = []
    for slot in provisional:
        name = votes[slot].most_common(1)[0][0] if votes[slot] else slot
        names.append(name if name not in names else slot)
    template = _template(pattern, names)
    first = cases[0]
    # slots of the path that the cases share a value for (the app's name, say) are
    # constants of the pattern: filled into its path now
    constants = {
        name: value
        for name, value in (first.get("slots") or {}).items()
        if name not in names
        and all((c.get("slots") or {}).get(name, "").casefold() == value.casefold() for c in cases)
    }
    steps = [
        {k: v for k, v in step.items() if k != "open_slots"}
        for step in fill(first["steps"], constants)
    ]
    return {
        "id": derived_id("experience_pattern", first.get("app_name") or "", template),
        "template": template,
        "app_name": first.get("app_name"),
        "intent": first.get("intent"),
        "app_version": max((c.get("app_version") or "" for c in cases), default="") or None,
        "steps": steps,
        "slot_names": names,
        "success_cases": sorted(case["id"] for case in cases),
        "success_rate": float(np.mean([case["success_rate"] for case in cases])),
    }


def _path_shape(case: Experience) -> tuple[str, ...]:
    return tuple(step["action_type"] for step in case["steps"])


def clusters(cases: list[Experience], threshold: float) -> list[list[Experience]]:
    """Greedy clusters of cases whose (unit) vectors are this similar to the cluster's
    first case (one matrix-vector product per cluster)."""
    if not cases:
        return []
    vectors = np.stack([np.asarray(case["vector"], dtype=np.float32) for case in cases])
    free = np.ones(len(cases), dtype=bool)
    out = []
    for seed in range(len(cases)):
        if not free[seed]:
            continue
        members = free & (vectors @ vectors[seed] >= threshold)
        members[seed] = True
        free &= ~members
        out.append([cases[i] for i in np.flatnonzero(members)])
    return out


def generalise(cases: list[Experience], settings: ExperienceSettings) -> list[dict[str, Any]]:
    """The patterns of every app-and-intent group of successful ``cases`` (with vectors)."""
    groups: dict[tuple[str, str], list[Experience]] = defaultdict(list)
    for case in cases:
        if case.get("outcome") == "success" and case["steps"]:
            key = ((case.get("app_name") or "").casefold(), (case.get("intent") or "").casefold())
            groups[key].append(case)
    patterns = []
    for group in groups.values():
        for cluster in clusters(group, settings.cluster_threshold):
            shapes = Counter(_path_shape(case) for case in cluster)
            shape, count = shapes.most_common(1)[0]
            if count < settings.pattern_min_cases:
                continue
            same_path = [case for case in cluster if _path_shape(case) == shape]
            found = pattern_of(same_path)
            if found is not None:
                patterns.append(found)
    return patterns
