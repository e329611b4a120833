"""The detectors beyond the seed's layers, the ladder and the profiles, with lists."""

from __future__ import annotations

import itertools

import orjson
import pytest

from loopwarden.agents.monitor.loop_monitor import LoopMonitor
from loopwarden.agents.monitor.state import LoopState
from loopwarden.agents.spin.cycle import cycle_period
from loopwarden.agents.spin.profiles import PROPOSERS
from loopwarden.agents.spin.signature import call_signature
from loopwarden.errors import ConfigurationError
from loopwarden.schemas.events import ActionEvent, validate_action
from loopwarden.schemas.positions import Origin
from loopwarden.schemas.warnings import LoopWarning
from loopwarden.settings import DetectionSettings

CFG = DetectionSettings()
_ids = itertools.count()


def action(action_type: str, **payload) -> ActionEvent:
    """A valid action of loop ``L`` with a fresh id and increasing time."""
    n = next(_ids)
    envelope = {"event_id": f"e{n}", "loop_id": "L", "occurred_at": 1_700_000_000.0 + n}
    return validate_action({**envelope, "payload": {"action_type": action_type, **payload}})


def calls(spec: str, **payload) -> list:
    """One event per letter: the letter is the call (its argument), ``result`` its result
    unless given; a lower-case letter fails."""
    events = []
    for letter in spec:
        fields = {"params": {"q": letter.upper()}, "result": payload.get("result", letter.upper())}
        if letter.islower():
            fields |= {"success": False, "error_message": "boom"}
        events.append(action(action_type="tool", **fields))
    return events


def kinds(events, detectors, ladder=False, **settings) -> list[list[str]]:
    """The warning kinds shown for each event."""
    cfg = DetectionSettings(detectors=tuple(detectors), ladder=ladder, **settings)
    monitor = LoopMonitor(cfg)
    state = LoopState(events[0].loop_id)
    out = []
    for i, event in enumerate(events):
        findings = monitor.observe(state, event, Origin(0, i))
        for warning in findings.warnings:
            LoopWarning.model_validate(warning)  # the public shape
        out.append([w["kind"] for w in findings.warnings])
    return out


def fired(per_event: list[list[str]]) -> list[int]:
    return [i for i, shown in enumerate(per_event) if shown]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("AAAA", [3]),  # the 4th identical call with the identical result
        ("AAAAA", [3, 4]),
        ("AAABAAA", []),  # interrupted
        ("AAA", []),
    ],
)
def test_same_call_same_result(spec, expected):
    assert fired(kinds(calls(spec), ["repeated_call"])) == expected


def test_same_call_with_another_result_or_an_unknown_result_is_progress():
    events = calls("AA") + calls("AA", result="other")
    assert fired(kinds(events, ["repeated_call"])) == []
    unknown = [action(action_type="tool", params={"q": "A"}) for _ in range(5)]
    assert fired(kinds(unknown, ["repeated_call"])) == []


def test_volatile_ids_and_times_do_not_make_calls_different():
    def call(request_id: str, when: str):
        return action(action_type="http", params={"url": "/x", "request_id": request_id, "q": when})

    first = call("1", "at 2026-11-22T10:00:00Z")
    second = call("2", "at 2026-11-22T10:00:05Z")
    other = action(action_type="http", params={"url": "/y", "request_id": "3"})
    sig = [
        call_signature(e, CFG.volatile_param_keys, CFG.volatile_value_pattern)
        for e in (first, second, other)
    ]
    assert sig[0] == sig[1] != sig[2]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("aaa", [2]),  # the same call failing three times
        ("aab", []),  # another call
        ("aAa", []),  # a success in between
    ],
)
def test_same_call_failing(spec, expected):
    assert fired(kinds(calls(spec), ["repeated_failure"])) == expected


def test_failures_of_any_kind_in_a_row():
    assert fired(kinds(calls("abcde"), ["failure_streak"])) == [4]
    assert fired(kinds(calls("abcdEf"), ["failure_streak"])) == []


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        (list("ABABAB"), 2),
        (list("ABCABCABC"), 3),
        (list("XABABAB"), 2),
        (list("ABABA"), None),  # two and a half repetitions
        (list("AAAAAA"), None),  # a single call is repeated_call's
        (list("ABCDEF"), None),
    ],
)
def test_cycle_period(keys, expected):
    assert cycle_period(keys, max_period=5, repeats=3) == expected


def test_a_cycle_of_calls_and_results():
    assert fired(kinds(calls("ABABAB"), ["action_cycle"])) == [5]
    changing = [
        action(action_type="tool", params={"q": q}, result=f"{q}{i}")
        for i, q in enumerate("ABABAB")
    ]  # the same calls, new results each time: progress (edit → test → edit → test)
    assert fired(kinds(changing, ["action_cycle"])) == []


def test_no_progress_in_a_window():
    spec = "ABC" + "BCAB" * 2  # after the first three, every call repeats an earlier one
    per_event = kinds(calls(spec), ["no_progress"], no_progress_calls=8)
    assert fired(per_event) == [10]


def test_the_ladder_warns_escalates_and_stops_once_per_episode():
    events = calls("A" * 14)
    cfg = dict(repeat_result_count=2)
    per_event = kinds(events, ["repeated_call"], ladder=True, **cfg)
    # findings from the 2nd call on: 1st finding warn, 3rd escalate, 5th final, 7th stop
    assert fired(per_event) == [1, 3, 5, 7]
    monitor = LoopMonitor(DetectionSettings(detectors=("repeated_call",), ladder=True, **cfg))
    state = LoopState(events[0].loop_id)
    steps = []
    for i, event in enumerate(events):
        for warning in monitor.observe(state, event, Origin(0, i)).warnings:
            steps.append((warning["step"], warning["level"], warning["next_actions"]))
    assert [s[0] for s in steps] == ["warn", "escalate", "final", "stop"]
    assert steps[-1][1:] == ("critical", ["stop"]) and steps[1][1] == "standard"


def test_a_quiet_spell_ends_the_episode():
    events = calls("AAA") + calls("BCD") + calls("EEE")
    per_event = kinds(events, ["repeated_call"], ladder=True, repeat_result_count=2)
    assert fired(per_event) == [1, 7]  # a new episode starts with a new first warning


def test_the_ladder_state_survives_a_snapshot():
    events = calls("AAAAA")
    monitor = LoopMonitor(
        DetectionSettings(detectors=("repeated_call",), ladder=True, repeat_result_count=2)
    )
    state = LoopState(events[0].loop_id)
    for i, event in enumerate(events[:3]):
        monitor.observe(state, event, Origin(0, i))
    restored = LoopState.restore(state.loop_id, state.snapshot())
    shown = monitor.observe(restored, events[3], Origin(0, 3)).warnings
    assert [w["step"] for w in shown] == ["escalate"]


def test_profiles_and_unknown_detectors():
    default = LoopMonitor(DetectionSettings())
    assert default.ladder and default.gate is not None
    assert default.detectors == PROPOSERS
    loops = LoopMonitor(DetectionSettings(profile="loops"))
    assert loops.ladder and loops.gate is None
    assert loops.detectors == (
        "repeated_rejection",
        "repeated_outcome",
        "repeated_message",
        "restated_message",
        "code_edit",
    )
    assert LoopMonitor(DetectionSettings(profile="seed")).detectors == (
        "action_type",
        "code_edit",
        "action_failed",
    )
    patterns = LoopMonitor(DetectionSettings(profile="patterns"))
    assert patterns.ladder and "repeated_call" in patterns.detectors
    with pytest.raises(ConfigurationError, match="unknown detector 'nope'"):
        LoopMonitor(DetectionSettings(detectors=("nope",)))
    with pytest.raises(ValueError, match="ladder steps must rise"):
        DetectionSettings(ladder_escalate_at=5, ladder_final_at=4)


def test_an_edit_to_another_file_is_another_region():
    def edit(file):
        return action(action_type="edit", edit={"start_line": 10, "end_line": 10, "file": file})

    same = [edit("a.py") for _ in range(4)]
    assert fired(kinds(same, ["code_edit"])) == [3]
    alternating = [edit(f) for f in ("a.py", "b.py", "a.py", "b.py", "a.py")]
    assert fired(kinds(alternating, ["code_edit"])) == []


def test_a_version_2_snapshot_restores_into_named_detectors():
    old = (
        b'{"v":2,"p":0,"seq":3,"it":3,"w":[],"st":["search",3],"ed":[1,10,11,2,["e1","e2"]],'
        b'"thr":null,"ren":null,"rf":[],"off":{},"ts":[1.0,3.0]}'
    )
    state = LoopState.restore("L", old)
    assert state.detector("action_type").snapshot() == ["search", 3]
    assert state.detector("code_edit").snapshot() == [1, 10, 11, 2, ["e1", "e2"]]


def test_a_monologue_and_empty_responses():
    def turn(text: str) -> ActionEvent:
        return action(action_type="assistant", turn="message", result=text)

    talk = [turn(f"thinking {i}") for i in range(5)]
    assert fired(kinds(talk, ["monologue"])) == [4]
    acting = [turn("a"), turn("b"), action(action_type="tool"), turn("c"), turn("d")]
    assert fired(kinds(acting, ["monologue"])) == []
    empty = [turn(""), turn("  "), turn("")]
    assert fired(kinds(empty, ["monologue"])) == [2]


def test_layer_one_can_key_on_type_and_name():
    events = [action(action_type="tool", action_name=name) for name in ("grep", "grep", "ls")]
    assert fired(kinds(events, ["action_type"])) == [2]
    assert fired(kinds(events, ["action_type"], action_type_key="type_and_name")) == []


def test_the_publisher_digests_a_long_result_whole():
    from loopwarden.streams.client.publisher import make_action_event

    long = "x " * 3000
    event = make_action_event("L", "tool", result=long)
    assert len(event.payload.result) == 2000
    same = make_action_event("L", "tool", result=long)
    other = make_action_event("L", "tool", result=long + "y")  # differs after the cut
    assert event.result_key == same.result_key != other.result_key


def test_parallel_calls_of_one_response_are_one_step():
    parallel = [action(action_type="read_file", response_id="r1") for _ in range(3)]
    assert fired(kinds(parallel, ["action_type"])) == []  # one step, not three in a row
    state = LoopState("L")
    monitor = LoopMonitor(DetectionSettings())
    for i, event in enumerate(parallel):
        monitor.observe(state, event, Origin(0, i))
    assert state.iteration == 1
    steps = [action(action_type="read_file", response_id=f"r{i}") for i in range(3)]
    assert fired(kinds(steps, ["action_type"])) == [2]


def test_an_unknown_outcome_is_not_a_failure():
    from loopwarden.streams.client.publisher import encode_event

    unknown = [action(action_type="submit", success=None) for _ in range(5)]
    assert fired(kinds(unknown, ["action_failed", "failure_streak"])) == []
    decoded = validate_action(orjson.loads(encode_event(unknown[0])))
    assert decoded.payload.success is None  # the publisher keeps "unknown" on the wire
    failed = action(action_type="submit", success=False)
    assert fired(kinds([failed], ["action_failed"])) == [0]
