"""The provenance stamps of the deciding components (see :mod:`loopwarden.schemas.provenance`).

Bump a ``*_LOGIC_VERSION`` whenever the same events and settings would make that
component decide differently: audits then report the change as a logic change,
not as a bug.
"""

from __future__ import annotations

import math
from typing import Any

from loopwarden.agents.spin.gate import load as load_gate
from loopwarden.agents.spin.profiles import resolve as resolve_profile
from loopwarden.schemas.provenance import flat_settings, produced_by
from loopwarden.settings import (
    AnalystSettings,
    DetectionSettings,
    FleetSettings,
    GuardrailSettings,
)

MONITOR_LOGIC_VERSION = 6
"""2: a loop idle longer than ``limits.idle_loop_ttl_s`` starts afresh when its next event
is applied (event time); before, a wall-clock sweep decided it. 3: detectors and
profiles; warnings carry ``step`` and an edit's ``file`` (the seed profile decides as
before). 4: calls compare strings with whitespace runs and quote marks made alike, and
only request ids are volatile keys; laddered warnings say their step in words. 5: refused
calls (``rejected``) and the counterpart's turns, progress that is not a repeat, a run's
end inside a restating streak; warnings carry ``repeated`` and are written from it; a
long result keeps its end. 6: the gated profile is the default (rules propose, a
calibrated gate decides); the gate model's id is part of the settings stamped
(``detection.gate_model_id``), so a replay with another model says so."""

GUARDRAILS_LOGIC_VERSION = 1
ANALYST_LOGIC_VERSION = 2
"""2: a logic-spin warning carries its trigger's iteration (it was 0)."""


def _ttl(seconds: float) -> float | None:
    return None if math.isinf(seconds) else seconds


def monitor_stamp(
    detection: DetectionSettings, idle_loop_ttl_s: float, max_event_bytes: int
) -> dict[str, Any]:
    """What decides the monitor's warnings and reflection requests (TTL None: never)."""
    values = flat_settings("detection", detection)
    if resolve_profile(detection).gate:
        values["detection.gate_model_id"] = str(
            load_gate(detection.gate_model).trained_on.get("id")
        )
    values["limits.idle_loop_ttl_s"] = _ttl(idle_loop_ttl_s)
    values["limits.max_event_bytes"] = max_event_bytes
    return produced_by("monitor", MONITOR_LOGIC_VERSION, values)


def guardrails_stamp(
    guardrails: GuardrailSettings, idle_family_ttl_s: float, max_event_bytes: int
) -> dict[str, Any]:
    """What decides rerun decisions and guardrail warnings (TTL None: never)."""
    values = flat_settings("guardrails", guardrails)
    values["limits.idle_family_ttl_s"] = _ttl(idle_family_ttl_s)
    values["limits.max_event_bytes"] = max_event_bytes
    return produced_by("guardrails", GUARDRAILS_LOGIC_VERSION, values)


def analyst_stamp(analyst: AnalystSettings) -> dict[str, Any]:
    """What decides the analyst's logic-spin warnings (an LLM when one is configured)."""
    values = flat_settings("analyst", analyst, ("base_url", "model", "param_similarity_threshold"))
    return produced_by("analyst", ANALYST_LOGIC_VERSION, values)


FLEET_LOGIC_VERSION = 2
"""2: the timeline message in the monitor's family of texts."""


def fleet_stamp(fleet: FleetSettings, max_event_bytes: int) -> dict[str, Any]:
    """What decides the fleet role's family warnings."""
    values = flat_settings("fleet", fleet)
    values["limits.max_event_bytes"] = max_event_bytes
    return produced_by("fleet", FLEET_LOGIC_VERSION, values)
