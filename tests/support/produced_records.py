"""One record of every output kind, made by the code that makes it in the worker.

The output contract test (``tests/unit/test_output_contract.py``) checks them against
their types and models; ``tests/support/freeze_records.py`` froze them, with
:func:`input_records`, as the records of schema version 1 both clients' tests read
(``tests/fixtures/records/``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from guardrail_records import completion
from one_record import process_one

from loopwarden.agents import findings
from loopwarden.agents.analyst.agent import cached
from loopwarden.agents.analyst.analyst import ReflectionAnalyst
from loopwarden.agents.experience.advice import build_advice
from loopwarden.agents.experience.matching import choose
from loopwarden.agents.guardrails.declaration import FAMILY_STATES as GUARDRAIL_FAMILIES
from loopwarden.agents.guardrails.records import GuardrailProcessor
from loopwarden.agents.monitor.declaration import LOOP_STATES
from loopwarden.agents.monitor.records import RecordProcessor
from loopwarden.schemas import codec
from loopwarden.schemas.dead_letter import SourcePosition
from loopwarden.schemas.memory_outcomes import (
    maintenance_report,
    rejected_outcome,
    stored_outcome,
)
from loopwarden.schemas.tasks import TaskSpec
from loopwarden.settings import DetectionSettings, ExperienceSettings
from loopwarden.streams.client.event_builder import (
    completion_record,
    encode_event,
    make_action_event,
    override_record,
)
from loopwarden.streams.client.memory_writes import encode_memory_write, make_memory_write
from loopwarden.streams.client.tasks import task_end_event, task_start_event
from loopwarden.streams.runtime.verdicts import verdicts_of


def monitor_records() -> dict[str, list]:
    """A loop failing the same way until it is warned: warnings, requests, lessons."""
    processor = RecordProcessor(DetectionSettings(profile="seed"))
    states: dict = {}
    found: dict[str, list] = {"warnings": [], "reflection_requests": [], "memory_lessons": []}
    for n in range(5):
        event = make_action_event(
            "loop-c",
            "deploy",
            params={"env": "prod"},
            success=False,
            error_message="permission denied: ./deploy.sh",
            event_id=f"c-{n}",
            occurred_at=1000.0 + n,
        )
        out = process_one(
            processor, LOOP_STATES, encode_event(event), None, SourcePosition("a", 0, n), states.get
        )
        states.update(out.states)
        for name, record in out.outputs():
            found[name].append(record)
    return found


def guardrail_records() -> dict[str, list]:
    """A family rerun until its limit: rerun decisions and a guardrail warning."""
    processor = GuardrailProcessor()
    states: dict = {}
    found: dict[str, list] = {"decisions": [], "warnings": []}
    for n, loop_id in enumerate(["fam", "fam_r1", "fam_r2", "fam_r3", "fam_r4"]):
        value = completion(f"done-{n}", loop_id, 100.0 + n)
        out = process_one(
            processor, GUARDRAIL_FAMILIES, value, None, SourcePosition("c", 0, n), states.get
        )
        states.update(out.states)
        for name, record in out.outputs():
            found[name].append(record)
    return found


def analyst_records() -> dict[str, list]:
    request = {
        "request_id": "r1",
        "kind": "action_reflection",
        "loop_id": "L",
        "level": "critical",
        "trigger_event_id": "e1",
        "occurred_at": 1.0,
        "memory_budget_bytes": 0,
        "recent_actions": [],
        "reflection": {"action_type": "deploy", "success": False, "error_message": "exit 1"},
    }
    analysis = asyncio.run(ReflectionAnalyst().analyze(request))
    return {"reflections": [analysis], "loop_completions": [cached(analysis)]}


def fleet_records() -> dict[str, list]:
    totals = {"loops": 3, "steps": 9, "failures": 4, "tokens": 10, "cost": 0.01}
    warning = findings.fleet_warning(
        kind="tool_outage",
        root_loop_id="tool\x1fweb_search",
        trigger_loop_id="loop-4",
        trigger_event_id="e-4",
        step="warn",
        reason="the tool is failing for everyone",
        suggestions=["wait"],
        agents=["researcher"],
        loop_ids=["loop-1", "loop-4"],
        event_ids=["e-1", "e-4"],
        count=5,
        occurred_at=1000.0,
        stamp=None,
        tool="web_search",
        error="503 Service Unavailable",
        **{k: totals[k] for k in ("loops", "steps", "failures", "tokens", "cost")},
    )
    notice = findings.outage_notice(
        tool="web_search", error_digest="ab12", error="503", since=990.0, until=1000.0, loops=5
    )
    return {"fleet_warnings": [warning], "tool_outages": [notice]}


def other_records() -> dict[str, list]:
    match = choose(
        TaskSpec(task_description="book a flight", intent="travel"),
        [],
        [],
        [],
        ExperienceSettings(),
    )
    outcomes = [
        stored_outcome("w1", "agent", "m1", False),
        rejected_outcome("w2", "agent", ValueError("vector of 3 numbers, the table's are 384")),
        maintenance_report({"promoted": 2, "decayed": 5}, 10.0),
    ]
    verdicts = verdicts_of([("e1", "L")], [], "monitor", ["fleet", "monitor"], 5.0)
    return {
        "advice": [build_advice("t1", "loop", match, [], 5.0)],
        "memory_outcomes": outcomes,
        "verdicts": verdicts,
    }


def output_records() -> dict[str, list[Any]]:
    """Topic role → the records the worker's code writes there, every kind at least once."""
    found: dict[str, list[Any]] = {}
    for part in (monitor_records, guardrail_records, analyst_records, fleet_records, other_records):
        for name, records in part().items():
            found.setdefault(name, []).extend(records)
    return found


def input_records() -> dict[str, list[Any]]:
    """Topic role → records the clients write to the topics the worker reads, every kind
    once (an action, a task's start and end; a completion, an override; a memory)."""
    action = make_action_event(
        "loop-a",
        "search",
        params={"q": "flights"},
        result="3 found",
        event_id="a-1",
        occurred_at=1000.0,
    )
    start = task_start_event("loop-a", "book a flight", intent="travel", event_id="t-1")
    end = task_end_event("loop-a", True, feedback_score=0.9, event_id="t-2")
    _, _, done = completion_record("fam_r1", 0.4, 0.2, max_reruns=3)
    _, _, override = override_record(
        "fam", "ops@example.com", override_max_reruns=True, override_reason="a long task"
    )
    memory = make_memory_write("deploys need the staging token first", event_id="m-1", scope="team")
    return {
        "actions": [
            codec.loads(encode_event(action, 1000.5)),
            start.model_dump(mode="json", exclude_none=True),
            end.model_dump(mode="json", exclude_none=True),
        ],
        "loop_completions": [codec.loads(done), codec.loads(override)],
        "memory_writes": [codec.loads(encode_memory_write(memory))],
    }
