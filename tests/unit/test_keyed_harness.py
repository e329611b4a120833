"""Capabilities tested through the keyed-state kit without a broker
(:class:`~loopwarden.streams.runtime.state.harness.KeyedHarness`): every record sees
its states restored from their snapshots and events of another partition's key come
back re-routed, as on a worker — and decides what the processor decides in memory."""

from __future__ import annotations

from guardrail_records import completion
from one_record import process_one

from loopwarden.agents.guardrails.declaration import FAMILY_STATES as GUARDRAIL_FAMILIES
from loopwarden.agents.guardrails.records import GuardrailProcessor
from loopwarden.agents.monitor.declaration import LOOP_STATES
from loopwarden.agents.monitor.records import RecordProcessor
from loopwarden.schemas.dead_letter import SourcePosition
from loopwarden.schemas.positions import default_partition
from loopwarden.settings import DetectionSettings
from loopwarden.streams.client.event_builder import encode_event, make_action_event
from loopwarden.streams.runtime.state.harness import KeyedHarness

LOOPS = [f"loop-{n}" for n in range(6)]


def spinning_records() -> list[tuple[bytes, bytes]]:
    """Six loops, interleaved, each repeating one search with the same empty result."""
    records = []
    for step in range(5):
        for loop_id in LOOPS:
            event = make_action_event(
                loop_id,
                "search",
                params={"query": f"where is {loop_id}"},
                result="no match",
                success=True,
                event_id=f"{loop_id}-{step}",
                occurred_at=1000.0 + step,
            )
            records.append((loop_id.encode(), encode_event(event, 0.0)))
    return records


def test_the_monitor_through_the_kit_decides_as_in_memory_despite_snapshots_and_reroutes():
    harness = KeyedHarness(LOOP_STATES, RecordProcessor(DetectionSettings(), partitions=4))
    for key, value in spinning_records():
        harness.feed(value, key, partition=0)  # every record on partition 0: most re-route
    in_memory, states = RecordProcessor(DetectionSettings()), {}
    expected = []
    for offset, (key, value) in enumerate(spinning_records()):
        outcome = process_one(
            in_memory, LOOP_STATES, value, key, SourcePosition("a", 0, offset), states.get
        )
        states.update(outcome.states)
        expected += outcome.warnings
    warnings = harness.named("warnings")
    assert len(expected) >= len(LOOPS)  # each loop was warned
    assert [w["warning_id"] for w in warnings] == [w["warning_id"] for w in expected]
    moved = {r.key.decode() for r in harness.reroutes}
    assert moved == {loop for loop in LOOPS if default_partition(loop.encode(), 4) != 0}
    assert sorted(harness.table) == sorted(loop.encode() for loop in LOOPS)


def test_guardrails_through_the_kit_count_reruns_across_restored_family_states():
    harness = KeyedHarness(GUARDRAIL_FAMILIES, GuardrailProcessor(partitions=3))
    loops = ["fam_9", "fam_9_r1", "fam_9_r2", "fam_9_r3", "fam_9_r4"]
    records = [completion(f"c{n}", loop_id, 100 + n) for n, loop_id in enumerate(loops)]
    for value in records:
        harness.feed(value, b"fam_9", partition=1)
    in_memory, states, expected = GuardrailProcessor(), {}, []
    for offset, value in enumerate(records):
        outcome = process_one(
            in_memory,
            GUARDRAIL_FAMILIES,
            value,
            b"fam_9",
            SourcePosition("c", 0, offset),
            states.get,
        )
        states.update(outcome.states)
        expected += outcome.decisions
    decisions = harness.named("decisions")
    assert len(decisions) == 4  # one per scheduled run
    assert [d["decision_result"] for d in decisions] == [d["decision_result"] for d in expected]
    assert [d["decision_result"]["rerun_count"] for d in decisions][-1] == 3
    (letter,) = harness.dead_letters  # the fourth rerun was never scheduled
    assert letter.message.startswith("fam_9_r4 was never scheduled: family fam_9 allows 3")
    assert list(harness.table) == [b"fam_9"]


def test_the_fleet_through_the_kit_finds_a_delegation_cycle_as_in_memory():
    from loopwarden.agents.fleet.declaration import FAMILY_STATES as FLEET_FAMILIES
    from loopwarden.agents.fleet.records import FleetProcessor

    agents = ["A", "B", "A", "B", "A", "B"]
    records = []
    for index, agent in enumerate(agents):
        loop = "root" if index == 0 else f"c{index}"
        parent = None if index == 0 else ("root" if index == 1 else f"c{index - 1}")
        family = {"parent_loop_id": parent, "root_loop_id": "root"} if parent else {}
        event = make_action_event(
            loop,
            "delegate",
            agent=agent,
            task="Find the cheapest flight to Paris",
            event_id=f"e{index}",
            occurred_at=1000.0 + index,
            **family,
        )
        records.append((loop.encode(), encode_event(event, 0.0)))
    harness = KeyedHarness(FLEET_FAMILIES, FleetProcessor(partitions=4))
    for key, value in records:
        harness.feed(value, key, partition=default_partition(key, 4))  # as published
    in_memory, states, expected = FleetProcessor(), {}, []
    for offset, (key, value) in enumerate(records):
        outcome = process_one(
            in_memory, FLEET_FAMILIES, value, key, SourcePosition("a", 0, offset), states.get
        )
        states.update(outcome.states)
        expected += outcome.fleet_warnings
    fleet = harness.named("fleet_warnings")
    assert fleet and {w["kind"] for w in fleet} == {"delegation_cycle"}
    assert [w["warning_id"] for w in fleet] == [w["warning_id"] for w in expected]
    assert harness.reroutes  # the children's events went to their root's partition
    assert list(harness.table) == [b"root"]
