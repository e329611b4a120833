"""Outputs for people: a warning, a fleet warning, a decision, a dead letter … as the
text ``loopwarden tail``, ``detect`` and the demo print (or as a JSON line)."""

from __future__ import annotations

from typing import Any


def render(item: Any, fmt: str) -> str:
    """One output item as a JSON line or as readable text."""
    from loopwarden.schemas import codec
    from loopwarden.schemas.dead_letter import DeadLetter
    from loopwarden.schemas.warnings import LoopWarning

    data = item if isinstance(item, dict) else item.to_json_dict()
    if fmt == "json":
        return codec.dumps_line(data).decode()
    if isinstance(item, LoopWarning):
        return format_warning(item)
    if isinstance(item, DeadLetter):
        src = item.source
        return (
            f"[dead letter] {item.reason} at {src.topic}[{src.partition}]@{src.offset}: "
            f"{item.message}\n  {data['preview']}\n"
        )
    if data.get("type") == "rerun_decision":
        decision = data.get("decision_result") or {}
        why = decision.get("finalize_reason") or decision.get("rerun_reason")
        return (
            f"[decision] {data.get('loop_id')} → {decision.get('decision')} ({why}), rerun "
            f"{decision.get('rerun_count')} of {decision.get('max_reruns')}\n"
        )
    if data.get("type") == "fleet_warning":
        return format_fleet_warning(data)
    if "reflection_id" in data:
        return (
            f"[reflection] {data.get('loop_id')} {data.get('kind')} "
            f"spinning={data.get('is_spinning')}: {data.get('reason')}\n"
        )
    if "status" in data and "scope" in data:
        return (
            f"[memory] {data.get('status')} scope={data.get('scope')} {data.get('event_id', '')}\n"
        )
    kind = data.get("kind", data.get("type"))
    return f"[{kind}] loop={data.get('loop_id')} level={data.get('level')}\n"


def format_fleet_warning(data: dict[str, Any]) -> str:
    """A fleet warning for people: the family, the finding, who was told."""
    totals = data.get("totals") or {}
    agents = ", ".join(data.get("agents") or []) or "-"
    return (
        f"[fleet {data.get('root_loop_id')}] {data.get('kind')} ({data.get('step')}): "
        f"{data.get('reason')}\n    agents: {agents}; told {len(data.get('loop_ids') or [])} "
        f"live loop(s); family so far: {totals.get('loops')} loops, {totals.get('steps')} "
        f"steps, {totals.get('failures')} failures\n"
    )


def format_warning(warning: Any, max_lines: int | None = None) -> str:
    """A warning for people: a header line, then the timeline text indented (its first
    ``max_lines`` non-empty lines when given)."""
    step = f", step {warning.step}" if getattr(warning, "step", None) else ""
    header = (
        f"[{warning.loop_id}] {warning.kind} (level {warning.level}, "
        f"iteration {warning.iteration}{step}): {warning.reason}"
    )
    lines = warning.timeline_message.rstrip().splitlines()
    if max_lines is not None:
        lines = [line for line in lines if line.strip()]
        if len(lines) > max_lines:
            more = len(lines) - max_lines
            lines = [*lines[:max_lines], f"… {more} more line(s) in its timeline_message"]
    body = "\n".join("    " + line for line in lines)
    return f"{header}\n{body}\n"
