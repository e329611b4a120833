"""Tool outages: the same tool failing the same way across loops, and what the monitor
then does not count against an agent."""

from __future__ import annotations

import pytest
from one_record import process_one

from loopwarden.agents.fleet import FleetProcessor
from loopwarden.agents.fleet.declaration import FAMILY_STATES as FLEET_FAMILIES
from loopwarden.agents.fleet.outage_board import OutageBoard
from loopwarden.agents.fleet.tool_outage import ToolOutages, error_digest, tool_key
from loopwarden.agents.monitor.declaration import LOOP_STATES
from loopwarden.agents.monitor.records import RecordProcessor
from loopwarden.schemas import codec
from loopwarden.schemas.dead_letter import SourcePosition
from loopwarden.schemas.events import validate_action
from loopwarden.schemas.fleet import FleetWarning
from loopwarden.schemas.positions import default_partition
from loopwarden.schemas.warnings import LoopWarning
from loopwarden.settings import DetectionSettings, FleetSettings

DOWN = "503 Service Unavailable: upstream search-api-7f3c91a2 timed out after 30000 ms"


def failure(loop: str, at: float, n: int, error: str = DOWN, tool: str = "web_search") -> dict:
    return {
        "event_id": f"{loop}-{n}",
        "loop_id": loop,
        "occurred_at": at,
        "payload": {
            "action_type": tool,
            "params": {"q": f"q{n}"},
            "success": False,
            "error_message": error,
        },
    }


def success(loop: str, at: float, tool: str = "web_search") -> dict:
    return {
        "event_id": f"{loop}-ok-{at}",
        "loop_id": loop,
        "occurred_at": at,
        "payload": {"action_type": tool, "params": {"q": "x"}, "result": "3 hits"},
    }


def usual(tool: str = "web_search", calls: int = 40, failing_every: int = 10) -> list[dict]:
    """The tool's usual traffic: ``calls`` calls by eight loops, one in
    ``failing_every`` failing for the agent's own reason."""
    return [
        failure(f"usual-{n % 8}", 900.0 + n, n, "404 nothing matched the query", tool)
        if n % failing_every == failing_every - 1
        else success(f"usual-{n % 8}", 900.0 + n, tool)
        for n in range(calls)
    ]


BROKEN = [
    failure(f"other-{n}", 990.0 + n / 2, 0, f"400 bad query syntax near {word!r}")
    for n, word in enumerate(("AND", "OR", "NOT", "NEAR", "(", ")", '"', "*", "~"))
]
WORKED = usual() + BROKEN
"""The tool usually works (one call in ten fails, in eight loops: its usual rate), and
since a moment ago fails for nearly everyone (each agent's own way first): it is down,
and the next failures are judged for an outage."""


def run(events: list[dict], **settings: object) -> tuple[list, list, list]:
    processor = FleetProcessor(FleetSettings(**settings))
    states: dict = {}
    warnings, fleet, notices = [], [], []
    for offset, event in enumerate(events):
        out = process_one(
            processor,
            FLEET_FAMILIES,
            codec.dumps(event),
            None,
            SourcePosition("a", 0, offset),
            states.get,
        )
        states.update(out.states)
        warnings += out.warnings
        fleet += out.fleet_warnings
        notices += out.tool_outages
    return warnings, fleet, notices


def test_five_loops_failing_alike_within_a_minute_is_one_outage_and_each_loop_is_told():
    events = [
        failure(f"loop-{n}", 1000 + 10 * n, 0, DOWN.replace("7f3c91a2", f"{n}a{n}b05c9e"))
        for n in range(5)
    ]
    warnings, fleet, notices = run(WORKED + events)
    [outage] = fleet
    # the same shape as a family's fleet warning: the model's, key for key
    assert outage == FleetWarning.model_validate(outage).model_dump(mode="json")
    assert outage["kind"] == "tool_outage" and outage["tool"] == "web_search"
    assert outage["trigger_event_id"] == "loop-4-0" and outage["count"] == 5
    assert sorted(w["loop_id"] for w in warnings) == [f"loop-{n}" for n in range(5)]
    for warning in warnings:
        LoopWarning.model_validate(warning)
        assert "failing for everyone" in warning["reason"]
    [notice] = notices
    assert notice["since"] == 1000 and notice["until"] == 1040 + 120


def test_a_loop_failing_the_same_way_during_the_outage_is_told_once_and_the_notice_extends():
    events = WORKED + [failure(f"loop-{n}", 1000 + n, 0) for n in range(5)]
    events += [failure("late", 1100, 0), failure("late", 1101, 1), failure("loop-0", 1102, 1)]
    warnings, fleet, notices = run(events)
    assert len(fleet) == 1
    assert [w["loop_id"] for w in warnings[5:]] == ["late"]
    assert [n["until"] for n in notices] == [1004 + 120, 1100 + 120, 1101 + 120, 1102 + 120]


NOT_OUTAGES = {
    "four loops: one short": WORKED + [failure(f"loop-{n}", 1000 + n, 0) for n in range(4)],
    "one loop failing five times": WORKED + [failure("loop-0", 1000 + n, n) for n in range(5)],
    "spread over more than the window": WORKED
    + [failure(f"loop-{n}", 1000 + 20 * n, 0) for n in range(5)],
    "five different errors": WORKED
    + [failure(f"loop-{n}", 1000 + n, 0, f"{word} not found") for n, word in enumerate("abcde")],
    "five tools": WORKED + [failure(f"loop-{n}", 1000 + n, 0, tool=f"tool-{n}") for n in range(5)],
    # most calls of the tool succeed: five failing alike is not "down for everyone"
    "most calls work": usual() + [failure(f"loop-{n}", 1000 + n, 0) for n in range(5)],
    # a tool that never works here: its failures are its nature, not an outage
    "never works": usual(failing_every=1) + [failure(f"loop-{n}", 1000 + n, 0) for n in range(9)],
    # a code search that finds nothing for a third of its calls: many agents failing it
    # alike within a minute is what it always does
    "fails routinely": usual(calls=200, failing_every=3)
    + [failure(f"loop-{n}", 1000 + n, 0, "404 nothing matched the query") for n in range(9)],
    # a worker that just started has no usual rate to compare with
    "no usual rate yet": [failure(f"loop-{n}", 1000 + n, 0) for n in range(12)],
    # a usual rate from one loop is one agent's habit, not the tool's
    "usual rate of one loop": [success("only", 900.0 + n) for n in range(40)]
    + [failure(f"loop-{n}", 1000 + n, 0) for n in range(12)],
}


@pytest.mark.parametrize("events", NOT_OUTAGES.values(), ids=NOT_OUTAGES.keys())
def test_no_outage(events):
    assert run(events) == ([], [], [])


def test_an_outage_of_a_tool_that_fails_routinely_is_a_change_from_its_usual_rate():
    # the same routine tool, now failing every call with one error: it is down once its
    # last 20 calls hold far more failures than a third (17 here: P ≈ 3e-6 at 1/3)
    events = usual(calls=200, failing_every=3) + [
        failure(f"loop-{n}", 1000 + n, 0) for n in range(24)
    ]
    warnings, fleet, _ = run(events)
    assert [w["kind"] for w in fleet] == ["tool_outage"]
    told = sorted(w["loop_id"] for w in warnings)
    assert told == sorted(f"loop-{n}" for n in range(15, 24))  # from the 16th failure


def test_the_outage_is_over_after_its_quiet_time_and_may_start_again():
    first = [failure(f"loop-{n}", 1000 + n, 0) for n in range(5)]
    again = [failure(f"next-{n}", 2000 + n, 0) for n in range(5)]
    _, fleet, _ = run(WORKED + first + [success("between", 1990.0)] + again)
    assert [w["trigger_event_id"] for w in fleet] == ["loop-4-0", "next-4-0"]


def test_error_digests_mask_volatile_tokens_and_read_the_first_line():
    assert error_digest(DOWN) == error_digest(
        DOWN.replace("30000", "31000").replace("7f3c91a2", "9e1d05b7")
    )
    assert error_digest("boom\ntrace 1") == error_digest("boom\ntrace 2")
    assert error_digest("not found: a") != error_digest("permission denied: a")


def test_the_outage_state_survives_a_snapshot():
    state = ToolOutages("web_search")
    cfg = FleetSettings()
    for n in range(3):
        state.observe(validate_action(failure(f"loop-{n}", 1000 + n, 0)), cfg, None)
    state = ToolOutages.restore("web_search", state.snapshot())
    for n in range(3, 5):
        _, fleet, _ = state.observe(validate_action(failure(f"loop-{n}", 1000 + n, 0)), cfg, None)
    assert len(fleet) == 1


def test_an_outage_under_way_survives_a_snapshot_in_its_stored_form():
    state = ToolOutages("web_search")
    cfg = FleetSettings()
    for n in range(5):
        state.observe(validate_action(failure(f"loop-{n}", 1000 + n, 0)), cfg, None)
    (outage,) = state.outages.values()
    stored = codec.loads_state(state.snapshot())["o"]
    assert list(stored.values()) == [[outage.since, outage.last_seen, outage.error, outage.told]]
    restored = ToolOutages.restore("web_search", state.snapshot())
    assert restored.outages == state.outages
    warnings, fleet, notices = restored.observe(
        validate_action(failure("late", 1010, 0)), cfg, None
    )
    assert [w["loop_id"] for w in warnings] == ["late"] and fleet == []
    assert notices[0]["loops"] == len(outage.told) + 1


def test_a_failure_goes_to_its_tools_partition():
    processor = FleetProcessor(partitions=8)
    event = failure("loop-a", 1000, 0)
    home = default_partition(b"loop-a", 8)
    for n, earlier in enumerate(WORKED):
        process_one(
            processor, FLEET_FAMILIES, codec.dumps(earlier), b"x", SourcePosition("a", home, n)
        )
    target = default_partition(tool_key("web_search").encode(), 8)
    out = process_one(
        processor, FLEET_FAMILIES, codec.dumps(event), b"loop-a", SourcePosition("a", home, 0)
    )
    moved = [r for r in out.reroutes if r.key == tool_key("web_search").encode()]
    assert (len(moved) == 1) is (target != home)
    if moved:
        again = process_one(
            processor,
            FLEET_FAMILIES,
            moved[0].value,
            moved[0].key,
            SourcePosition("rr", target, 0),
            origin=moved[0].origin,
        )
        assert list(again.states) == [tool_key("web_search")] and again.events == 0


def monitor_warnings(board: OutageBoard | None, events: list[dict]) -> list[str]:
    processor = RecordProcessor(DetectionSettings(profile="seed"))
    processor.outages = board
    states: dict = {}
    kinds = []
    for offset, event in enumerate(events):
        out = process_one(
            processor,
            LOOP_STATES,
            codec.dumps(event),
            None,
            SourcePosition("a", 0, offset),
            states.get,
        )
        states.update(out.states)
        kinds += [w["kind"] for w in out.warnings]
    return kinds


def test_the_monitor_does_not_count_a_failure_an_outage_covers():
    board = OutageBoard()
    board.note(
        {"tool": "web_search", "error_digest": error_digest(DOWN), "since": 1000, "until": 1100}
    )
    during = [failure("mine", 1010 + n, n) for n in range(4)]
    assert monitor_warnings(None, during)  # without the outage: the seed warns every failure
    assert monitor_warnings(board, during) == []
    assert board.suppressed == 4
    other_error = [failure("mine", 1010, 0, "401 Unauthorized")]
    after = [failure("mine", 1200, 0)]
    assert monitor_warnings(board, other_error) and monitor_warnings(board, after)


def test_a_failure_an_outage_covers_is_still_a_lesson_marked_as_the_outages():
    board = OutageBoard()
    board.note(
        {"tool": "web_search", "error_digest": error_digest(DOWN), "since": 1000, "until": 1100}
    )
    processor = RecordProcessor(DetectionSettings())
    processor.outages = board
    covered = failure("mine", 1010, 0)
    out = process_one(processor, LOOP_STATES, codec.dumps(covered), None, SourcePosition("a", 0, 0))
    assert out.warnings == [] and out.requests == []
    [lesson] = out.lessons
    assert lesson["payload"]["source_event_id"] == "mine-0"
    assert "during_tool_outage" in lesson["payload"]["tags"]
    assert DOWN.split(":")[0] in lesson["payload"]["content"]
    mine = failure("mine", 1011, 1, "401 Unauthorized")  # the agent's own: not marked
    out = process_one(
        processor, LOOP_STATES, codec.dumps(mine), None, SourcePosition("a", 0, 1), out.states.get
    )
    assert "during_tool_outage" not in out.lessons[0]["payload"]["tags"]


def test_an_outage_of_a_many_line_error_is_covered_by_the_monitors_board():
    """The notice's error digest is of the whole error, as the board digests a failure
    (it was the first line's: a many-line error was never covered)."""
    error = "Traceback (most recent call last):\n  upstream pool exhausted\nRuntimeError: 503"
    events = WORKED + [failure(f"loop-{n}", 1000 + n, 0, error) for n in range(5)]
    _, fleet, notices = run(events)
    assert len(fleet) == 1
    board = OutageBoard()
    board.note(notices[-1])
    assert board.covers(validate_action(failure("late", 1010, 0, error)))
    assert not board.covers(validate_action(failure("late", 1010, 0, error.replace("503", "x"))))


def test_a_failure_rerouted_to_its_tool_and_its_family_is_redacted_once(monkeypatch):
    """A delegated loop's failed call, keyed by its own loop id, goes both to its tool's
    owner and to its family's root: two re-routes of one redacted copy."""
    from loopwarden.schemas.events import ActionEvent

    partitions = 8
    home = default_partition(b"child-1", partitions)
    tool_home = default_partition(tool_key("web_search").encode(), partitions)
    root = next(
        f"root-{n}"
        for n in range(100)
        if default_partition(f"root-{n}".encode(), partitions) not in (home, tool_home)
    )
    processor = FleetProcessor(partitions=partitions)
    for n, earlier in enumerate(WORKED):
        process_one(
            processor, FLEET_FAMILIES, codec.dumps(earlier), b"x", SourcePosition("a", home, n)
        )
    event = failure("child-1", 1000, 0, "503 for key sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c")
    event["payload"].update(parent_loop_id=root, root_loop_id=root)
    redactions = []
    real = ActionEvent.redacted

    def counted(self):
        redactions.append(self.event_id)
        return real(self)

    monkeypatch.setattr(ActionEvent, "redacted", counted)
    out = process_one(
        processor, FLEET_FAMILIES, codec.dumps(event), b"child-1", SourcePosition("a", home, 9)
    )
    keys = sorted(r.key for r in out.reroutes)
    assert keys == sorted([tool_key("web_search").encode(), root.encode()])
    assert redactions == ["child-1-0"]
    assert all(b"sk-live-4f9a" not in r.value for r in out.reroutes)


def test_a_failure_of_a_declared_outage_goes_to_its_tool_from_any_partition():
    """A partition whose own recent calls do not show the outage (its loops came late)
    still sends the outage's failures to the tool's owner: the loop is told."""
    processor = FleetProcessor(partitions=8)
    board = processor.board = OutageBoard()
    target = default_partition(tool_key("web_search").encode(), 8)
    loop = next(
        f"late-{n}" for n in range(100) if default_partition(f"late-{n}".encode(), 8) != target
    )
    home = default_partition(loop.encode(), 8)

    def moved(n: int) -> list:
        data = codec.dumps(failure(loop, 1010 + n, n))
        out = process_one(
            processor, FLEET_FAMILIES, data, loop.encode(), SourcePosition("a", home, n)
        )
        return [r for r in out.reroutes if r.key == tool_key("web_search").encode()]

    assert moved(0) == []  # no outage known, nothing unusual here
    board.note(
        {"tool": "web_search", "error_digest": error_digest(DOWN), "since": 1000, "until": 1100}
    )
    assert len(moved(1)) == 1
    assert board.suppressed == 0  # asking is not counting


def test_the_notice_reader_waits_long_and_longer_while_no_notice_comes():
    """The outage board's reader fetches rare notices: half a second after one, and
    up to four times that while the topic is quiet (it was a third of an idle worker's
    fetches at a steady half second), never the stream's 10 ms."""
    from loopwarden.agents.fleet.outage_notices import QUIET_WAIT_FACTOR, notice_reader_settings
    from loopwarden.settings import Settings

    settings = Settings()
    reader = notice_reader_settings(settings).kafka
    assert reader.fetch_max_wait_ms == settings.kafka.idle_fetch_max_wait_ms == 500
    assert reader.idle_fetch_max_wait_ms == QUIET_WAIT_FACTOR * 500 == 2000
    assert settings.kafka.fetch_max_wait_ms == 10  # the worker's own settings untouched
