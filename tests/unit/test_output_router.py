"""Named outputs: one route each, sinks attached by name, every capability's outputs routed."""

from __future__ import annotations

from typing import Any

import pytest
from output_recording import Recording

from loopwarden.agents.capabilities import CAPABILITIES, capability, replayable
from loopwarden.schemas.families import family_of
from loopwarden.settings import Settings
from loopwarden.streams.runtime.outputs import ROUTES, OutputRouter
from loopwarden.streams.runtime.sink import RecordSink


def never_connected() -> Any:
    raise AssertionError("the router must not open a producer to queue a record")


@pytest.fixture
def router() -> OutputRouter:
    return OutputRouter(RecordSink(never_connected, linger_s=3600), Settings())


def test_every_output_a_capability_names_has_a_route():
    for each in CAPABILITIES:
        assert set(each.outputs) <= set(ROUTES), each.role
        if each.replay is not None:
            assert set(each.replay.audited) <= set(each.outputs), each.role


def test_each_route_names_a_topic_of_the_settings():
    topics = Settings().topics
    declared = set(topics.model_dump().values())
    for name, route in ROUTES.items():
        assert route.topic(topics) in declared, name


def test_keys_follow_the_route():
    settings = Settings()
    warning = {"loop_id": "task_r2", "warning_id": "w"}
    assert ROUTES["warnings"].key(warning, settings) == b"task_r2"
    assert ROUTES["decisions"].key(warning, settings) == family_of("task_r2").encode()
    assert ROUTES["memory_outcomes"].key([{"scope": "s"}, {"scope": "t"}], settings) == b"s"
    assert ROUTES["warnings"].key_of_loop("task_r2") == "task_r2"
    assert ROUTES["decisions"].key_of_loop("task_r2") == family_of("task_r2")
    assert ROUTES["memory_outcomes"].key_of_loop("task_r2") is None


def test_actions_are_keyed_by_their_familys_root_as_the_client_keys_them():
    from loopwarden.schemas.events import ActionEvent

    settings, route = Settings(), ROUTES["actions"]
    alone = {"loop_id": "l1", "payload": {"action_type": "grep"}}
    delegated = {"loop_id": "l2", "payload": {"action_type": "grep", "root_loop_id": "r"}}
    child = {"loop_id": "l3", "payload": {"action_type": "grep", "parent_loop_id": "p"}}
    assert route.key(alone, settings) == b"l1"
    assert route.key(delegated, settings) == b"r" and route.key(child, settings) == b"p"
    event = ActionEvent.model_validate({**delegated, "event_id": "e", "occurred_at": 1.0})
    assert route.key(event, settings) == b"r"
    assert route.key_of_loop("l2") is None  # a delegated loop's actions are on its root's


async def test_emit_queues_the_record_and_hands_the_value_to_the_sinks_of_its_name(router):
    warnings, advice = Recording("warnings"), Recording("advice", "warnings")
    router.attach(warnings)
    router.attach(advice)
    value = {"loop_id": "l1", "warning_id": "w1"}
    router.emit_all([("warnings", value), ("reflection_requests", {"loop_id": "l1"})])
    assert router.sink.pending_records == 2
    assert warnings.seen == [("warnings", value)]
    assert advice.seen == [("warnings", value)]
    assert router.sinks("advice") == [advice]
    assert router.sinks("reflections") == []


def test_a_sink_naming_an_unknown_output_is_refused(router):
    with pytest.raises(ValueError, match=r"unknown output name\(s\) \['warning'\]"):
        router.attach(Recording("warning"))
    with pytest.raises(KeyError, match="no output named 'warning'"):
        router.topic("warning")


def test_replay_inputs_and_processors_come_from_the_capabilities():
    names = {c.replay.input for c in replayable() if c.replay is not None}
    assert names == {"actions", "completions"}
    monitor = capability("monitor").replay
    assert monitor is not None
    processor = monitor.build(Settings())
    assert type(processor).__name__ == "RecordProcessor"
    with pytest.raises(KeyError, match="no capability with role 'nope'"):
        capability("nope")


async def test_sinks_receive_an_event_model_as_plain_json(router):
    from loopwarden.schemas.events import validate_action
    from loopwarden.streams.client.event_builder import encode_event

    event = validate_action(
        {
            "event_id": "e1",
            "loop_id": "l1",
            "occurred_at": 1.0,
            "payload": {"action_type": "grep"},
        }
    )
    recording = Recording("actions")
    router.attach(recording)
    router.emit("actions", event, encoded=encode_event(event))
    ((name, value),) = recording.seen
    assert name == "actions" and isinstance(value, dict)
    assert (value["loop_id"], value["payload"]["action_type"]) == ("l1", "grep")
