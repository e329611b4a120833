"""The demo: simulated agent loops through a real broker and a real worker.

Eleven loops publish their actions through :class:`AsyncPublisher`:

- ``healthy-research`` and ``healthy-coder`` vary their actions and succeed;
- ``spinner`` keeps calling ``web_search`` with the same query and gets the same
  results every time (a repeated outcome: warned, escalated, then told to stop);
- ``edit-looper`` keeps making small edits to the same lines, running tests in
  between (Layer 3);
- ``failing-deploy`` retries a deploy that fails the same way three times;
- ``family-planner`` and the five runs it delegated to, in a circle (planner →
  researcher → planner …, the same task each time): one family, whose every loop the
  fleet role warns at the fifth run, then tells to stop at the sixth.

One malformed and one oversized event are published too; they land on the
dead-letter topic while the worker keeps going. The demo knows which warnings
to expect by running the same detectors offline over the same events, waits for
them on the warnings topic, and reports whether they match.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from loopwarden.agents.analyst.heuristics import semantic_spin
from loopwarden.agents.fleet.records import decide_offline
from loopwarden.agents.monitor.records import RecordProcessor
from loopwarden.agents.monitor.state import LoopState
from loopwarden.schemas.events import ActionEvent
from loopwarden.schemas.fleet import FLEET_KINDS
from loopwarden.schemas.ids import derived_id
from loopwarden.schemas.outputs import ReflectionRequestRecord, WarningRecord
from loopwarden.schemas.warnings import LoopWarning
from loopwarden.settings import Settings
from loopwarden.streams.client.publisher import AsyncPublisher, make_action_event
from loopwarden.streams.client.subscriber import DeadLetterSubscriber, WarningSubscriber

DEMO_TEXT_LINES = 4
"""Lines of each warning's text the demo prints (the rest is in ``timeline_message``)."""


@dataclass(frozen=True)
class Step:
    """One action of a simulated loop."""

    loop_id: str
    action_type: str
    fields: dict[str, Any]


def _edit(start: int, end: int) -> dict[str, Any]:
    return {"edit": {"start_line": start, "end_line": end}, "params": {"file": "parser.py"}}


def scenario() -> list[list[Step]]:
    """The loops, each a list of steps, interleaved round-robin when published."""
    research = ["web_search", "read_page", "summarize", "web_search", "read_page", "write_notes"]
    coder = [
        "read_file",
        "modify_code",
        "run_tests",
        "read_file",
        "modify_code",
        "run_tests",
        "finish",
    ]
    edits = [(40, 42), (41, 43), (40, 41), (42, 44), (41, 42)]
    edit_loop: list[Step] = []
    for start, end in edits:
        edit_loop.append(Step("edit-looper", "modify_code", _edit(start, end)))
        edit_loop.append(
            Step("edit-looper", "run_tests", {"success": True, "result": "41 passed, 1 failed"})
        )
    deploy = Step(
        "failing-deploy",
        "shell",
        {
            "params": {"cmd": "./deploy.sh --prod"},
            "success": False,
            "error_message": "permission denied: ./deploy.sh",
            "result": "bash: ./deploy.sh: permission denied",
        },
    )
    return [
        [
            Step("healthy-research", a, {"params": {"query": f"q{i}"}, "result": f"found {i}"})
            for i, a in enumerate(research)
        ],
        [Step("healthy-coder", a, {}) for a in coder],
        [
            Step(
                "spinner",
                "web_search",
                {
                    "params": {"query": "latest release notes"},
                    "result": "No results found for 'latest release notes'.",
                },
            )
            for _ in range(9)
        ],
        edit_loop,
        [
            Step("failing-deploy", "read_file", {"params": {"path": "deploy.sh"}}),
            deploy,
            deploy,
            deploy,
            Step("failing-deploy", "shell", {"params": {"cmd": "chmod +x deploy.sh"}}),
        ],
        *delegation_family(),
    ]


FAMILY_TASK = "Find the cheapest direct flight from Berlin to Lisbon on 12 December"


def delegation_family() -> list[list[Step]]:
    """A planner and a researcher handing one task back and forth, each run a loop of
    its own in one family: the fleet role warns them all at the fifth, stops them all
    at the sixth."""
    loops: list[list[Step]] = []
    parent = None
    for n in range(6):
        agent = "planner" if n % 2 == 0 else "researcher"
        loop_id = "family-planner" if n == 0 else f"family-{agent}-{n}"
        fields: dict[str, Any] = {"agent": agent, "task": FAMILY_TASK, "params": {"to": n}}
        if parent is not None:
            fields.update(parent_loop_id=parent, root_loop_id="family-planner")
        loops.append([Step(loop_id, "delegate", fields)])
        parent = loop_id
    return loops


def build_events(run_id: str, start_time: float) -> list[ActionEvent]:
    """The scenario's events in publishing order, loop ids suffixed with ``run_id``."""
    loops = scenario()
    events: list[ActionEvent] = []
    for round_no in range(max(len(loop) for loop in loops)):
        for loop in loops:
            if round_no < len(loop):
                step = loop[round_no]
                fields = dict(step.fields)
                for name in ("parent_loop_id", "root_loop_id"):  # family links, this run's
                    if name in fields:
                        fields[name] = f"{fields[name]}-{run_id}"
                events.append(
                    make_action_event(
                        f"{step.loop_id}-{run_id}",
                        step.action_type,
                        event_id=f"{run_id}-{len(events)}",
                        occurred_at=start_time + len(events) * 0.01,
                        **fields,
                    )
                )
    return events


def expected_warnings(events: list[ActionEvent], settings: Settings) -> list[WarningRecord]:
    """The warnings the same detectors produce offline for ``events``: the monitor's, and
    the fleet role's for the loops of a family (a family's events share a partition, so
    the worker applies them in this order too)."""
    return _offline(events, settings)[0] + decide_offline(settings, events).warnings


def expected_analyst_ids(events: list[ActionEvent], settings: Settings) -> set[str]:
    """Ids of the ``logic_spin`` warnings the analyst gives without a model (its
    heuristics confirm the semantic checks the detectors ask for); empty when a model
    endpoint answers instead (its verdicts cannot be known offline)."""
    if not settings.analyst.enabled or settings.analyst.base_url:
        return set()
    ids = set()
    for request in _offline(events, settings)[1]:
        if request["kind"] != "semantic_spin_check":
            continue
        verdict = semantic_spin(
            request["recent_actions"],
            similarity=settings.analyst.param_similarity_threshold,
            language=settings.detection.language,
        )
        if verdict.is_spinning:
            ids.add(derived_id("logic_spin", request["loop_id"], request["trigger_event_id"]))
    return ids


def _offline(
    events: list[ActionEvent], settings: Settings
) -> tuple[list[WarningRecord], list[ReflectionRequestRecord]]:
    """(warnings, reflection requests) of the detectors over ``events``, offline."""
    monitor = RecordProcessor.for_settings(settings).monitor  # the worker's stamp
    states: dict[str, LoopState] = {}
    warnings: list[WarningRecord] = []
    requests: list[ReflectionRequestRecord] = []
    for event in events:
        state = states.setdefault(event.loop_id, LoopState(event.loop_id))
        findings = monitor.observe(state, event)
        if findings is not None:
            warnings.extend(findings.warnings)
            requests.extend(findings.requests)
    return warnings, requests


def loop_summaries(run_id: str, expected: list[WarningRecord], got: set[str]) -> list[str]:
    """One closing line per simulated loop: what it was told, and whether as expected."""
    lines = []
    for loop in scenario():
        name = loop[0].loop_id
        mine = [w for w in expected if w["loop_id"] == f"{name}-{run_id}"]
        if not mine:
            lines.append(f"{name}: no warnings, as expected")
            continue
        steps = " → ".join(w.get("step") or w["kind"] for w in mine)
        kinds = ", ".join(dict.fromkeys(w["kind"] for w in mine))
        missing = sum(w["warning_id"] not in got for w in mine)
        verdict = "as expected" if not missing else f"{missing} missing"
        lines.append(f"{name}: {len(mine)} warning(s), {kinds}: {steps}; {verdict}")
    return lines


@dataclass
class DemoResult:
    """What the demo saw."""

    expected: int
    received: list[LoopWarning]
    dead_letters: int
    missing: list[str]
    other: list[LoopWarning] = field(default_factory=list)  # e.g. the analyst's logic_spin
    summaries: list[str] = field(default_factory=list)
    """One line per simulated loop."""
    analyst_expected: int = 0

    @property
    def ok(self) -> bool:
        """All expected warnings and both dead letters arrived."""
        return not self.missing and self.dead_letters >= 2


LEGEND = (
    "Each warning: [loop] kind (level, iteration, step): reason, then the first lines of "
    "the text the agent reads. level: how deep a reflection the agent is asked for "
    "(minimal, standard, deep, critical); step: how far up the ladder the loop is (warn, "
    "escalate, final, then stop, when the agent is told to end the run)."
)
"""Printed before the first warning: what the header's words mean (docs/concepts.md)."""


async def run_demo(
    settings: Settings,
    echo: Callable[[str], None],
    step_delay_s: float = 0.15,
    timeout_s: float = 90.0,
) -> DemoResult:
    """Publish the scenario, print warnings as they arrive, return what was seen."""
    run_id = format(int(time.time() * 1000) % 10**8, "x")
    events = build_events(run_id, time.time())
    expected = expected_warnings(events, settings)
    expected_ids = {w["warning_id"] for w in expected}
    analyst_ids = expected_analyst_ids(events, settings)
    received: list[LoopWarning] = []
    other: list[LoopWarning] = []
    async with WarningSubscriber(settings) as warnings, DeadLetterSubscriber(settings) as letters:
        publisher_task = asyncio.create_task(_publish(settings, events, step_delay_s, echo))

        told_family: set[tuple[str, str | None, str]] = set()

        async def watch_warnings() -> None:
            async for warning in warnings:
                if warning.warning_id in expected_ids:
                    received.append(warning)
                    if warning.kind not in FLEET_KINDS:
                        echo(_format(warning))
                    elif (warning.kind, warning.step, warning.reason) not in told_family:
                        # every live loop of the family hears the same: say it once
                        told_family.add((warning.kind, warning.step, warning.reason))
                        echo(_format(warning))
                elif run_id in warning.loop_id:  # not a detector's: the analyst's, say so
                    other.append(warning)
                    echo(f"(from the reflection analyst, not compared offline)\n{_format(warning)}")
                # the analyst answers a little after the detectors: wait for its warnings too
                analysed = {w.warning_id for w in other} >= analyst_ids
                if len(received) >= len(expected_ids) and analysed:
                    return

        async def bounded_warnings() -> None:
            try:
                await asyncio.wait_for(watch_warnings(), timeout_s)
            except TimeoutError:
                echo(f"timed out after {timeout_s:.0f}s waiting for warnings")

        _, bad, _ = await asyncio.gather(
            bounded_warnings(), _collect_dead_letters(letters, echo, timeout_s), publisher_task
        )
    got = {w.warning_id for w in received}
    missing = [f"{w['loop_id']}:{w['kind']}" for w in expected if w["warning_id"] not in got]
    summaries = loop_summaries(run_id, expected, got)
    return DemoResult(len(expected_ids), received, bad, missing, other, summaries, len(analyst_ids))


async def _collect_dead_letters(
    letters: DeadLetterSubscriber, echo: Callable[[str], None], timeout_s: float
) -> int:
    found = 0

    async def watch() -> None:
        nonlocal found
        async for letter in letters:
            found += 1
            src = letter.source
            echo(
                f"  dead letter ({letter.reason}) from {src.topic}[{src.partition}]@"
                f"{src.offset}: {letter.message[:160]}"
            )
            if found >= 2:
                return

    try:
        await asyncio.wait_for(watch(), timeout_s)
    except TimeoutError:
        echo("timed out waiting for dead letters")
    return found


async def _publish(
    settings: Settings, events: list[ActionEvent], delay_s: float, echo: Callable[[str], None]
) -> None:
    async with AsyncPublisher(settings) as publisher:
        echo(
            f"publishing {len(events)} actions from {len(scenario())} simulated agent loops "
            "(six of them one family of delegated runs), plus one malformed and one "
            "oversized event…"
        )
        await publisher.send_raw(b'{"event_id": "bad-1", "loop_id": "x", "payload": {}}', b"x")
        big = (
            b'{"event_id":"big","loop_id":"x","occurred_at":1,"payload":{"action_type":"a",'
            b'"params":{"blob":"' + b"x" * (settings.limits.max_event_bytes + 1) + b'"}}}'
        )
        await publisher.send_raw(big, b"x")
        for event in events:
            publisher.publish_event(event)
            await asyncio.sleep(delay_s / 5)
        await publisher.flush()


def _format(warning: LoopWarning) -> str:
    from loopwarden.readable import format_warning

    if warning.kind in FLEET_KINDS:  # said once for the family: its loops hear the same
        return (
            f"[{warning.loop_id} and its family] {warning.kind} (step {warning.step}), told to "
            f"every live loop of the family: {warning.reason}"
        )
    return format_warning(warning, max_lines=DEMO_TEXT_LINES)
