"""The fleet role's pure logic: families of delegated loops, fleet detectors, the family ladder."""

from __future__ import annotations

import itertools

import pytest
from one_record import process_one

from loopwarden.agents.fleet import FamilyMonitor, FamilyState, FleetProcessor
from loopwarden.agents.fleet.declaration import FAMILY_STATES as FLEET_FAMILIES
from loopwarden.schemas import codec
from loopwarden.schemas.dead_letter import SourcePosition
from loopwarden.schemas.events import validate_action
from loopwarden.schemas.fleet import FleetWarning
from loopwarden.schemas.positions import default_partition
from loopwarden.schemas.warnings import LoopWarning
from loopwarden.settings import FleetSettings

TASK = "Find the cheapest flight to Paris for 2 people on 2026-12-01"


class Family:
    """Builds one family's events and feeds them to a monitor."""

    def __init__(self, **settings: object) -> None:
        self.monitor = FamilyMonitor(FleetSettings(**settings))
        self.state = FamilyState("root")
        self.ids = itertools.count()
        self.at = 1000.0

    def event(self, loop: str, agent: str, parent: str | None = None, **payload: object) -> dict:
        self.at += 1.0
        body = {"action_type": payload.pop("action_type", "tool"), "agent": agent, **payload}
        if parent is not None:
            body.update(parent_loop_id=parent, root_loop_id="root")
        return {
            "event_id": f"e{next(self.ids)}",
            "loop_id": loop,
            "occurred_at": self.at,
            "payload": body,
        }

    def send(self, loop: str, agent: str, parent: str | None = None, **payload: object):
        found = self.monitor.observe(
            self.state, validate_action(self.event(loop, agent, parent, **payload))
        )
        assert found is not None
        return found


def steps(found) -> list[tuple[str, str]]:
    return [(w["loop_id"], w["step"]) for w in found.warnings]


CYCLES = [
    # (agents of the loops in delegation order, the loop whose arrival is the 3rd repeat)
    (["A", "B", "A", "B", "A"], 4),
    (["A", "B", "C", "A", "B", "C", "A"], 6),
    (["A", "B", "B", "B"], 3),  # one agent delegating to itself
]


@pytest.mark.parametrize(("agents", "warned_at"), CYCLES)
def test_a_delegation_cycle_warns_every_live_loop_at_the_third_repeat(agents, warned_at):
    family = Family()
    for index, agent in enumerate(agents):
        loop = "root" if index == 0 else f"c{index}"
        parent = None if index == 0 else ("root" if index == 1 else f"c{index - 1}")
        found = family.send(loop, agent, parent, task=TASK)
        if index < warned_at:
            assert not found.warnings and not found.fleet_warnings
    assert len(found.fleet_warnings) == 1
    fleet = FleetWarning.model_validate(found.fleet_warnings[0])
    # the wire shape is the model's, key for key (one constructor for every producer)
    assert found.fleet_warnings[0] == fleet.model_dump(mode="json")
    assert fleet.kind == "delegation_cycle" and fleet.step == "warn"
    assert set(fleet.loop_ids) == {"root"} | {f"c{i}" for i in range(1, warned_at + 1)}
    assert steps(found) == [(loop, "warn") for loop in fleet.loop_ids]
    for warning in found.warnings:
        LoopWarning.model_validate(warning)  # the agents' own warning shape


NOT_CYCLES = [
    # one orchestrator handing three different tasks to one worker
    [
        ("A", TASK),
        ("B", "Book the hotel"),
        ("B", "Rent a car at the airport"),
        ("B", "Buy tickets"),
    ],
    # tasks unknown: not compared
    [("A", None), ("B", None), ("A", None), ("B", None), ("A", None)],
    # the same task worded with other ids is the same, but two repeats are not three
    [("A", TASK), ("B", TASK.replace("2026-12-01", "2026-12-02"))],
]


@pytest.mark.parametrize("loops", NOT_CYCLES)
def test_no_delegation_cycle(loops):
    family = Family()
    for index, (agent, task) in enumerate(loops):
        extra = {} if task is None else {"task": task}
        found = family.send(
            f"c{index}" if index else "root", agent, "root" if index else None, **extra
        )
        assert not found.fleet_warnings


def test_the_second_finding_stops_every_live_loop_and_a_late_loop_is_stopped_too():
    family = Family()
    agents = ["A", "B", "A", "B", "A", "B"]
    for index, agent in enumerate(agents):
        loop = "root" if index == 0 else f"c{index}"
        found = family.send(loop, agent, "root" if index else None, task=TASK)
    assert found.fleet_warnings[0]["step"] == "stop"
    assert {step for _, step in steps(found)} == {"stop"}
    assert all(w["next_actions"] == ["stop"] for w in found.warnings)
    late = family.send("late", "C", "root", task="Something else entirely, no cycle here")
    assert steps(late) == [("late", "stop")] and not late.fleet_warnings
    again = family.send("late", "C", "root")
    assert again.warnings == []  # told once


def test_an_ended_or_quiet_loop_is_not_told():
    family = Family(live_loop_ttl_s=60)
    family.send("root", "A", task=TASK)
    family.send("c1", "B", "root", task=TASK, terminated=True)  # ended
    family.send("c2", "A", "c1", task=TASK)
    family.at += 120  # root and c2 quiet past the TTL
    found = family.send("c3", "A", "c2", task=TASK)
    assert steps(found) == [("c3", "warn")]


def exchange(family: Family, request: str, answer: str) -> object:
    family.send("root", "Orchestrator", turn="message", result=request)
    family.send("root", "Orchestrator", turn="message", result="Next speaker WebSurfer")
    return family.send("c1", "WebSurfer", "root", turn="message", result=answer)


def test_the_same_request_and_answer_three_times_is_a_ping_pong():
    family = Family()
    request = "Please open the month selector on TimeAndDate and pick June 2023 for Houston"
    answer = "I clicked 'Month Selection'. Here is a screenshot of the Weather History page"
    assert not exchange(family, request, answer).fleet_warnings
    assert not exchange(family, request, answer + " at 10:31:07").fleet_warnings  # masked
    found = exchange(family, request, answer)
    assert [w["kind"] for w in found.fleet_warnings] == ["ping_pong"]
    assert found.fleet_warnings[0]["agents"] == ["Orchestrator", "WebSurfer"]
    assert {loop for loop, _ in steps(found)} == {"root", "c1"}


PING_PONG_NOT = [
    # the answer changes: progress
    [
        (
            "Please scroll down and read the next part of the page for the figures",
            f"I scrolled down to section {s} and read the figures about {t}",
        )
        for s, t in [("two", "rainfall"), ("five", "winds"), ("nine", "humidity")]
    ],
    # another request each time, answered each time
    [
        (
            f"Please search the archive for {city} weather records in June",
            f"I typed '{city} weather June' into the archive search and pressed enter",
        )
        for city in ("Houston", "Paris", "Lagos")
    ],
]


@pytest.mark.parametrize("pairs", PING_PONG_NOT)
def test_no_ping_pong(pairs):
    family = Family()
    for request, answer in pairs:
        assert not exchange(family, request, answer).fleet_warnings


def test_a_delegated_task_and_the_answer_make_an_exchange():
    family = Family()
    family.send("root", "Planner", task="Plan the trip")
    for n in range(3):
        family.send(
            f"c{n}",
            "Searcher",
            "root",
            task="Search flights from Berlin to Paris on the first of December",
        )
        found = family.send(
            f"c{n}",
            "Searcher",
            "root",
            turn="message",
            result="No flights found for that date, try another airline or day",
        )
    assert [w["kind"] for w in found.fleet_warnings] == ["ping_pong"]


BUDGETS = [
    # (settings, events' payload, the event index that warns, the one that stops)
    ({"budget_steps_warn": 3, "budget_steps_stop": 5}, {}, 2, 4),
    (
        {"budget_failures_warn": 2, "budget_failures_stop": 3},
        {"success": False, "error_message": "boom"},
        1,
        2,
    ),
    (
        {"budget_tokens_warn": 250, "budget_tokens_stop": 400},
        {"resource_usage": {"input_tokens": 80, "output_tokens": 20}},
        2,
        3,
    ),
    (
        {"budget_cost_warn": 0.2, "budget_cost_stop": 0.5},
        {"resource_usage": {"cost_usd": 0.1}},
        1,
        4,
    ),
]


@pytest.mark.parametrize(("settings", "payload", "warns", "stops"), BUDGETS)
def test_a_family_budget_warns_then_stops_over_all_its_loops(settings, payload, warns, stops):
    family = Family(**settings)
    found_at = {}
    for index in range(stops + 1):
        loop = "root" if index % 2 == 0 else "child"
        found = family.send(
            loop, "A" if loop == "root" else "B", None if loop == "root" else "root", **payload
        )
        for fleet in found.fleet_warnings:
            found_at[fleet["step"]] = index
    assert found_at == {"warn": warns, "stop": stops}


def test_budget_warn_must_be_below_stop():
    with pytest.raises(ValueError, match="budget_steps_warn"):
        FleetSettings(budget_steps_warn=5, budget_steps_stop=5)


def test_a_duplicate_event_is_not_counted_twice():
    family = Family(budget_steps_warn=2)
    event = validate_action(family.event("root", "A"))
    assert family.monitor.observe(family.state, event) is not None
    assert family.monitor.observe(family.state, event) is None
    assert family.state.steps == 1


def test_the_state_survives_a_snapshot_midway():
    family = Family()
    for index, agent in enumerate(["A", "B", "A", "B"]):
        family.send(
            "root" if index == 0 else f"c{index}", agent, "root" if index else None, task=TASK
        )
        family.state = FamilyState.restore("root", family.state.snapshot())
    found = family.send("c4", "A", "c3", task=TASK)
    assert [w["kind"] for w in found.fleet_warnings] == ["delegation_cycle"]


def test_the_loop_tree_stays_bounded():
    family = Family(max_loops=4)
    family.send("root", "A")
    for n in range(10):
        family.send(f"c{n}", "B", "root", terminated=True)
    assert len(family.state.loops) == 4 and "root" in family.state.loops


def record(events: list[dict]) -> bytes:
    return codec.dumps(events)


def test_an_event_whose_family_lives_here_is_not_redacted_by_the_fleet(monkeypatch):
    """Redaction is for what the fleet writes elsewhere (a re-route): an event of a
    family on its own partition is read as validated (the monitor redacts what it
    keeps); the fleet's redacting every event cost 4 % of a saturated worker."""
    from loopwarden.schemas.events import ActionEvent

    redactions: list[str] = []
    real = ActionEvent.redacted

    def counted(self):
        redactions.append(self.event_id)
        return real(self)

    monkeypatch.setattr(ActionEvent, "redacted", counted)
    processor = FleetProcessor(partitions=8)
    root = next(f"r{n}" for n in range(100) if default_partition(f"r{n}".encode(), 8) == 2)
    event = {
        "event_id": "e1",
        "loop_id": root,
        "occurred_at": 1.0,
        "payload": {"action_type": "x", "result": "key AKIAIOSFODNN7EXAMPLE"},
    }
    out = process_one(
        processor, FLEET_FAMILIES, record([event]), root.encode(), SourcePosition("t", 2, 0, 0)
    )
    assert out.events == 1 and not out.reroutes and redactions == []


def test_a_delegated_loops_event_is_rerouted_to_its_roots_partition_redacted():
    processor = FleetProcessor(partitions=8)
    root = next(f"r{n}" for n in range(100) if default_partition(f"r{n}".encode(), 8) == 0)
    child = next(f"k{n}" for n in range(100) if default_partition(f"k{n}".encode(), 8) == 3)
    secret = "AKIAIOSFODNN7EXAMPLE"
    root_event = {
        "event_id": "a",
        "loop_id": root,
        "occurred_at": 1.0,
        "payload": {"action_type": "x"},
    }
    child_event = {
        "event_id": "b",
        "loop_id": child,
        "occurred_at": 2.0,
        "payload": {"action_type": "x", "parent_loop_id": root, "result": f"key {secret}"},
    }
    direct = process_one(
        processor, FLEET_FAMILIES, record([root_event]), root.encode(), SourcePosition("t", 0, 5, 0)
    )
    assert list(direct.states) == [root] and direct.events == 1 and not direct.reroutes
    out = process_one(
        processor,
        FLEET_FAMILIES,
        record([child_event]),
        child.encode(),
        SourcePosition("t", 3, 9, 0),
        direct.states.get,
    )
    assert out.events == 0 and not out.states
    [moved] = out.reroutes
    assert moved.partition == 0 and moved.key == root.encode()
    assert secret.encode() not in moved.value
    again = process_one(
        processor,
        FLEET_FAMILIES,
        moved.value,
        moved.key,
        SourcePosition("reroute", 0, 0, 0),
        direct.states.get,
        origin=moved.origin,
    )
    assert again.events == 1 and list(again.states[root].loops) == [root, child]
    replayed = process_one(
        processor,
        FLEET_FAMILIES,
        moved.value,
        moved.key,
        SourcePosition("reroute", 0, 0, 0),
        again.states.get,
        origin=moved.origin,
    )
    assert replayed.events == 0  # its origin was applied before (a restart)


def test_bad_input_is_passed_over_not_dead_lettered_twice():
    processor = FleetProcessor()
    out = process_one(
        processor, FLEET_FAMILIES, b'[{"loop_id": 3}]', b"k", SourcePosition("t", 0, 0, 0)
    )
    assert out.dead_letters == [] and out.passed_over == 1 and out.events == 0
