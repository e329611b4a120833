"""What produced an output: the component, its logic version and the deciding settings.

Every warning, reflection request and rerun decision carries ``produced_by``, so an
audit can tell "a setting was different here" (another ``fingerprint``) from "the
logic changed" (another ``logic_version``) from "the same inputs gave another
answer" (a bug). ``settings`` holds the values behind the fingerprint, flat
(``"detection.spin_threshold": 3``), so a replay can name the setting that differs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from loopwarden.schemas import codec


class ProducedBy(BaseModel):
    """The provenance stamp of one output."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    component: str = Field(description="monitor, guardrails or analyst.")
    logic_version: int = Field(description="Bumped whenever the component decides differently.")
    fingerprint: str = Field(description="12 hex digits over the settings below.")
    settings: dict[str, Any] = Field(description="The settings that decide, by dotted name.")


def settings_fingerprint(values: Mapping[str, Any]) -> str:
    """12 hex digits that change whenever one of ``values`` does (key order ignored)."""
    canonical = codec.dumps({key: values[key] for key in sorted(values)})
    return hashlib.blake2b(canonical, digest_size=6).hexdigest()


def flat_settings(prefix: str, model: BaseModel, only: tuple[str, ...] = ()) -> dict[str, Any]:
    """``model``'s fields as ``{"prefix.field": value}`` (JSON values, sets sorted)."""
    values: dict[str, Any] = {}
    for name in only or tuple(type(model).model_fields):
        value = getattr(model, name)
        if isinstance(value, frozenset | set):
            value = sorted(value)
        elif isinstance(value, tuple):
            value = list(value)
        elif isinstance(value, BaseModel):
            value = value.model_dump(mode="json")
        values[f"{prefix}.{name}"] = value
    return values


def produced_by(component: str, logic_version: int, settings: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON-ready :class:`ProducedBy` (built once per processor, shared by its outputs)."""
    return {
        "component": component,
        "logic_version": logic_version,
        "fingerprint": settings_fingerprint(settings),
        "settings": dict(settings),
    }


def differing_settings(
    recorded: Mapping[str, Any], replayed: Mapping[str, Any]
) -> dict[str, tuple[Any, Any]]:
    """``{name: (recorded value, replayed value)}`` for every setting that differs."""
    names = sorted(set(recorded) | set(replayed))
    return {
        name: (recorded.get(name), replayed.get(name))
        for name in names
        if recorded.get(name) != replayed.get(name)
    }
