"""The settings a deployment decided with, read back from its outputs' ``produced_by``.

Every warning, reflection request and rerun decision carries the deciding settings,
flat (``"detection.profile": "patterns"``). An audit replays with them by default,
so auditing a deployment from a shell that lacks its variables reproduces what it
did instead of listing "settings differ" on every output (``--current-settings``
replays with the shell's own, for a what-if).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from typing import Any

from loopwarden.errors import ConfigurationError
from loopwarden.settings import Settings
from loopwarden.settings.overrides import with_values

SECTIONS = ("detection", "guardrails", "analyst", "limits")
"""Settings sections a stamp may name (others are not the deciding components')."""
_NEVER = ("limits.idle_loop_ttl_s", "limits.idle_family_ttl_s")
"""Stamped as None when infinite."""


def stamps_of(outputs: Iterable[Any]) -> dict[str, dict[str, Any]]:
    """Per component, the ``produced_by`` most outputs carry (by fingerprint)."""
    counts: dict[str, Counter[str]] = {}
    stamps: dict[str, dict[str, Any]] = {}
    for output in outputs:
        stamp = output.get("produced_by") if isinstance(output, dict) else None
        if not isinstance(stamp, dict) or not isinstance(stamp.get("settings"), dict):
            continue
        component, fingerprint = str(stamp.get("component")), str(stamp.get("fingerprint"))
        counts.setdefault(component, Counter())[fingerprint] += 1
        stamps.setdefault(f"{component}:{fingerprint}", stamp)
    return {
        component: stamps[f"{component}:{counter.most_common(1)[0][0]}"]
        for component, counter in counts.items()
    }


FACTS = frozenset({"detection.gate_model_id"})
"""What a stamp records beside the settings (the gate model's id): part of its
fingerprint, so a replay with another model shows as settings that differ, never
adopted as a setting."""


def with_recorded(
    settings: Settings, stamps: dict[str, dict[str, Any]]
) -> tuple[Settings, list[str]]:
    """``settings`` with every value the stamps record, and notes on what was adopted
    (a recorded name this version does not know is left, and said)."""
    by_section: dict[str, list[tuple[str, Any]]] = {}
    unknown: list[str] = []
    for stamp in stamps.values():
        for name, value in stamp["settings"].items():
            if name in FACTS:
                continue  # stamped beside the settings, not one of them
            section, _, field = name.partition(".")
            if (
                section not in SECTIONS
                or field not in type(getattr(settings, section)).model_fields
            ):
                unknown.append(name)
                continue
            if name in _NEVER and value is None:
                value = math.inf
            by_section.setdefault(section, []).append((name, value))
    adopted = settings
    for section, changes in by_section.items():  # a section this version refuses is left
        try:
            adopted = with_values(adopted, changes)
        except ConfigurationError as exc:
            unknown.append(f"{section} ({exc})")
    names = dict.fromkeys(name for changes in by_section.values() for name, _ in changes)
    changed = [name for name in names if _value(adopted, name) != _value(settings, name)]
    notes = []
    if stamps:
        prints = ", ".join(f"{c} {s['fingerprint']}" for c, s in sorted(stamps.items()))
        differ = f"; they differ from this shell's in {', '.join(changed)}" if changed else ""
        notes.append(
            f"replayed with the settings recorded in the outputs' produced_by ({prints})"
            f"{differ}; --current-settings replays with this shell's"
        )
    if unknown:
        notes.append(f"recorded settings this version does not read: {', '.join(unknown)}")
    return adopted, notes


def _value(settings: Settings, name: str) -> Any:
    section, _, field = name.partition(".")
    return getattr(getattr(settings, section), field)
