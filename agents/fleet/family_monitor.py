"""The pure core of the fleet role: one family event in, family warnings out.

:class:`FamilyMonitor` applies an action event to its family's
:class:`~loopwarden.agents.fleet.state.FamilyState` (the loop tree, the sums),
runs every fleet detector and puts their findings on the family's ladder: the
first finding warns every live loop, the ``fleet.ladder_stop_at``-th (or a
budget's stop level) tells every live loop to stop, and a loop that shows up
after the stop is told to stop at its next event. It reads no clock and does
no I/O: the worker, ``replay`` and the benchmarks run the same decisions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from loopwarden.agents import findings as findings_builder
from loopwarden.agents.fleet import (  # noqa: F401 (importing a detector registers it)
    delegation_cycle,
    family_budget,
    ping_pong,
    texts,
)
from loopwarden.agents.fleet.detector import (
    REGISTRY,
    FamilyObservation,
    FleetDetector,
    FleetFinding,
)
from loopwarden.agents.fleet.state import FamilyState, LoopNode, task_digest
from loopwarden.schemas.events import ActionEvent
from loopwarden.schemas.levels import ReflectionLevel
from loopwarden.schemas.outputs import FleetWarningRecord, JsonObject, WarningRecord
from loopwarden.settings import FleetSettings

Output = WarningRecord | FleetWarningRecord
"""Any record the fleet's family detectors produce."""
DETECTORS = ("delegation_cycle", "ping_pong", "family_budget")
LEVELS = {
    "warn": ReflectionLevel.STANDARD.value,
    "escalate": ReflectionLevel.DEEP.value,
    "stop": ReflectionLevel.CRITICAL.value,
}


@dataclass(slots=True)
class FamilyFindings:
    """What one event caused: per-loop warnings and fleet warnings, JSON-ready."""

    warnings: list[WarningRecord] = field(default_factory=list)
    fleet_warnings: list[FleetWarningRecord] = field(default_factory=list)


def _usage(event: ActionEvent) -> tuple[int, float]:
    """(tokens, cost in USD) the event reports in ``resource_usage`` (0 when it does not)."""
    usage = event.payload.resource_usage
    if not usage:
        return 0, 0.0
    tokens = usage.get("total_tokens")
    if not isinstance(tokens, int | float):
        parts = [usage.get("input_tokens"), usage.get("output_tokens")]
        tokens = sum(p for p in parts if isinstance(p, int | float))
    cost = usage.get("cost_usd")
    return int(tokens), float(cost) if isinstance(cost, int | float) else 0.0


class FamilyMonitor:
    """Applies action events to family state and tells the family what was found."""

    def __init__(
        self, settings: FleetSettings | None = None, stamp: JsonObject | None = None
    ) -> None:
        self.settings = settings or FleetSettings()
        self.stamp = stamp

    def observe(self, state: FamilyState, event: ActionEvent) -> FamilyFindings | None:
        """Apply ``event`` to ``state``; None when its id was applied before."""
        if state.seen_before(event.event_id):
            return None
        cfg = self.settings
        payload = event.payload
        now = event.occurred_at
        node = state.loops.get(event.loop_id)
        joined = node is None or node.steps == 0
        parent = payload.parent_loop_id if event.loop_id != state.root else None
        if parent is not None and parent not in state.loops:
            # named by its child before its own first event (its call is still running);
            # its own parent is known when its events arrive
            state.loops[parent] = LoopNode(None, parent, now, now)
        if node is None:
            node = LoopNode(parent, payload.agent or event.loop_id, now, now)
            state.loops[event.loop_id] = node
            state.forget_beyond(cfg.max_loops)
        if payload.agent:
            node.agent = payload.agent
        if node.parent is None and parent is not None:
            node.parent = parent
        node.last_seen = max(node.last_seen, now)
        node.steps += 1
        node.last_action = payload.action_type
        node.ended = node.ended or payload.terminated
        task_known = node.task is None and bool(payload.task)
        if task_known:
            node.task = task_digest(payload.task or "")
        tokens, cost = _usage(event)
        state.steps += 1
        state.tokens += tokens
        state.cost += cost
        if payload.failed:
            node.failures += 1
            state.failures += 1
        state.updated_at = max(state.updated_at, now)

        seen = FamilyObservation(event, node, state, cfg, joined, task_known)
        found: list[FleetFinding] = []
        for name in DETECTORS:
            detector = state.detectors.get(name)
            if not isinstance(detector, FleetDetector):
                kind = REGISTRY[name]
                detector = kind() if detector is None else kind.restore(detector)
                state.detectors[name] = detector
            finding = detector.observe(seen)
            if finding is not None:
                found.append(finding)
        out = FamilyFindings()
        for finding in found:
            if state.stopped:
                break
            self._climb(state, event, finding, out)
        if state.stopped and node.told != "stop" and not node.ended and state.stop:
            stop_kind, stop_reason = state.stop
            finding = FleetFinding(stop_kind, stop_reason, (), (event.event_id,), (), 0, stop=True)
            out.warnings.append(self._tell(event.loop_id, node, event, finding, "stop"))
        return out

    def _climb(
        self, state: FamilyState, event: ActionEvent, finding: FleetFinding, out: FamilyFindings
    ) -> None:
        """Put ``finding`` on the family's ladder and tell every live loop its step."""
        cfg = self.settings
        state.findings += 1
        if finding.stop or state.findings >= cfg.ladder_stop_at:
            step = "stop"
            state.stopped = True
            state.stop = [finding.kind, finding.reason]
        else:
            step = "warn" if state.findings == 1 else "escalate"
        told = []
        for loop in state.live_loops(event.occurred_at, cfg.live_loop_ttl_s):
            node = state.loops[loop]
            out.warnings.append(self._tell(loop, node, event, finding, step))
            told.append(loop)
        out.fleet_warnings.append(self._fleet_warning(state, event, finding, step, told))

    def _tell(
        self, loop: str, node: LoopNode, event: ActionEvent, finding: FleetFinding, step: str
    ) -> WarningRecord:
        node.told = step
        return findings_builder.warning(
            kind=finding.kind,
            loop_id=loop,
            trigger_event_id=event.event_id,
            level=LEVELS[step],
            reason=finding.reason,
            event_ids=finding.event_ids,
            action_type=node.last_action or event.payload.action_type,
            iteration=node.steps,
            timeline_message=texts.timeline(
                finding.kind, step, finding.reason, finding.suggestions
            ),
            occurred_at=event.occurred_at,
            stamp=self.stamp,
            suggestions=finding.suggestions,
            next_actions=["stop"] if step == "stop" else [],
            consecutive_count=finding.count or None,
            step=step,
        )

    def _fleet_warning(
        self,
        state: FamilyState,
        event: ActionEvent,
        finding: FleetFinding,
        step: str,
        told: list[str],
    ) -> FleetWarningRecord:
        return findings_builder.fleet_warning(
            kind=finding.kind,
            root_loop_id=state.root,
            trigger_loop_id=event.loop_id,
            trigger_event_id=event.event_id,
            step=step,
            reason=finding.reason,
            suggestions=finding.suggestions,
            agents=finding.agents,
            loop_ids=told,
            event_ids=finding.event_ids,
            count=finding.count,
            loops=len(state.loops),
            steps=state.steps,
            failures=state.failures,
            tokens=state.tokens,
            cost=state.cost,
            occurred_at=event.occurred_at,
            stamp=self.stamp,
        )
