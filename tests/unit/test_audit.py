"""Audit replay's pure parts: the range window, the comparison and its explanations."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import click
import pytest
from consumed_records import Rec

from loopwarden.agents.audit.compare import AuditContext, compare
from loopwarden.agents.audit.recorded import Recorded
from loopwarden.agents.audit.replayer import Replayer
from loopwarden.agents.audit.window import PartitionWindow, Place
from loopwarden.cli.replay import parse_offsets, parse_time, render
from loopwarden.errors import ConfigurationError
from loopwarden.schemas import codec
from loopwarden.settings import DetectionSettings, Settings
from loopwarden.settings.overrides import with_overrides

SETTINGS = Settings(detection=DetectionSettings(profile="seed"))  # the seed's triggers
ACTIONS = SETTINGS.topics.actions


def action(offset: int, loop: str = "L", action_type: str = "search", ts: int = 0) -> Rec:
    event = {"event_id": f"{loop}-{offset}", "loop_id": loop, "occurred_at": float(offset)}
    event["payload"] = {"action_type": action_type}
    return Rec(ACTIONS, 0, offset, ts or offset * 1000, loop.encode(), codec.dumps(event))


def as_recorded(replayer: Replayer, encoded: dict | None = None) -> Recorded:
    """What a worker with the same settings would have written (``encoded``: read back
    with the replay's byte index, as the audit run does)."""
    recorded = Recorded()
    for n, reproduced in enumerate(replayer.state.outputs.values()):
        recorded.add_output(Rec("out", 0, n, 0, None, codec.dumps(reproduced.output)), encoded)
    return recorded


def replayed(records: list[Rec], settings: Settings = SETTINGS, start: int = 0) -> Replayer:
    replayer = Replayer(settings)
    for record in records:
        replayer.apply(record, inside=record.offset >= start)
    return replayer


def test_a_window_by_offsets_and_by_time():
    window = PartitionWindow(start=2, end=5)
    assert [window.place(o, 0) for o in (1, 2, 4, 5)] == [
        Place.BEFORE,
        Place.INSIDE,
        Place.INSIDE,
        Place.AFTER,
    ]
    timed = PartitionWindow(since_ms=100, until_ms=200)
    places = [timed.place(o, ts) for o, ts in enumerate((50, 100, 90, 150, 200, 150))]
    # once inside, an older timestamp stays inside; once past `until`, everything is after
    inside = [Place.INSIDE] * 3
    assert places == [Place.BEFORE, *inside, Place.AFTER, Place.AFTER]


@pytest.mark.parametrize("by_bytes", [False, True])
def test_the_same_settings_agree_and_a_duplicate_is_not_a_difference(by_bytes):
    replayer = replayed([action(o) for o in range(4)])
    encoded = replayer.encoded() if by_bytes else None
    recorded = as_recorded(replayer, encoded)
    assert (not recorded.outputs) is by_bytes  # identical bytes are matched unparsed
    first = next(iter(replayer.state.outputs.values()))
    again = Rec("out", 0, 99, 0, None, codec.dumps(first.output))  # redelivered
    recorded.add_output(again, encoded)
    report = compare(replayer.state, recorded, AuditContext(replayer.stamps))
    assert report.agree
    assert report.totals().duplicates == 1 and report.totals().matched == len(
        replayer.state.outputs
    )
    assert any("at-least-once" in note for note in report.notes)


def test_a_change_without_a_settings_change_is_unexplained():
    replayer = replayed([action(o) for o in range(3)])
    recorded = as_recorded(replayer)
    (warning,) = [c[0].output for c in recorded.outputs.values() if c[0].kind == "warning"]
    warning["consecutive_count"] = 7  # a worker that decided otherwise with the same stamp
    report = compare(replayer.state, recorded, AuditContext(replayer.stamps))
    (difference,) = report.differences
    assert difference.status == "changed" and not difference.explained
    assert "consecutive_count: 7 → 3" in difference.summary
    assert "unexplained" in difference.explanation
    assert "UNEXPLAINED" in render(report)
    table = render(report).splitlines()
    assert table[0].split()[:2] == ["loop", "inputs"]  # not "events": requests count too
    assert any(line.startswith("inputs: events replayed (actions, reflection") for line in table)


def test_an_event_the_workers_have_not_committed_is_explained():
    replayer = replayed([action(o) for o in range(3)])
    committed = {(ACTIONS, 0): 2}  # the third event (offset 2) is not processed yet
    report = compare(replayer.state, Recorded(), AuditContext(replayer.stamps, committed))
    assert report.differences and all(d.status == "missing" for d in report.differences)
    assert all("had not processed" in d.explanation for d in report.differences)


def test_a_logic_version_change_is_named():
    replayer = replayed([action(o) for o in range(3)])
    recorded = as_recorded(replayer)
    for copies in recorded.outputs.values():
        copies[0].output["produced_by"] = {**copies[0].output["produced_by"], "logic_version": 1}
        copies[0].output["reason"] = "older wording"
    report = compare(replayer.state, recorded, AuditContext(replayer.stamps))
    assert report.differences
    assert all("logic changed" in d.explanation and d.explained for d in report.differences)


def test_analyst_warnings_are_set_aside_and_dead_letters_compared_by_position():
    bad = Rec(ACTIONS, 0, 3, 3000, b"L", b"{not json")
    replayer = replayed([*(action(o) for o in range(3)), bad])
    recorded = as_recorded(replayer)
    analyst = {
        "type": "warning",
        "warning_id": "w-analyst",
        "kind": "logic_spin",
        "loop_id": "L",
        "trigger_event_id": "L-2",
        "produced_by": {"component": "analyst", "logic_version": 1, "fingerprint": "x"},
    }
    recorded.add_output(Rec("out", 0, 50, 0, None, codec.dumps(analyst)))
    report = compare(replayer.state, recorded, AuditContext(replayer.stamps))
    assert report.not_replayed == 1
    (difference,) = report.differences  # the workers did not dead-letter offset 3
    assert difference.kind == "dead_letter" and difference.status == "missing"
    assert report.dead_letters == 1


def test_history_rebuilds_a_streak_that_began_before_the_range():
    records = [action(o) for o in range(4)]
    full = replayed(records)
    recorded = as_recorded(full)
    from_two = replayed(records, start=2)  # offsets 0-1 are history
    report = compare(from_two.state, recorded, AuditContext(from_two.stamps))
    assert report.agree and report.totals().inputs == 2
    assert len(from_two.state.history_event_ids) == 2 and from_two.state.history_loops == {"L"}
    bare = Replayer(SETTINGS)
    for record in records[2:]:
        bare.apply(record, inside=True)
    report = compare(bare.state, recorded, AuditContext(bare.stamps, rebuilt=False))
    assert report.differences and all("not rebuilt" in d.explanation for d in report.differences)


def test_setting_overrides_are_validated_by_name_and_value(tmp_path: Path):
    changed = with_overrides(SETTINGS, ["detection.spin_threshold=4", "detection.language=zh"])
    assert changed.detection.spin_threshold == 4 and changed.detection.language == "zh"
    config = tmp_path / "audit.toml"
    config.write_text("[detection]\nspin_threshold = 5\n[limits]\nidle_loop_ttl_s = 60\n")
    from_file = with_overrides(SETTINGS, ["detection.iteration_threshold=2"], config)
    assert from_file.detection.spin_threshold == 5 and from_file.limits.idle_loop_ttl_s == 60
    assert from_file.detection.iteration_threshold == 2
    with pytest.raises(ConfigurationError, match=r"unknown setting detection\.spin_treshold"):
        with_overrides(SETTINGS, ["detection.spin_treshold=4"])
    with pytest.raises(ConfigurationError, match=r"detection\.spin_threshold"):
        with_overrides(SETTINGS, ["detection.spin_threshold=0"])
    with pytest.raises(ConfigurationError, match="NAME=VALUE"):
        with_overrides(SETTINGS, ["spin_threshold"])


@pytest.mark.parametrize(
    ("given", "meant"),
    [
        ("detection.spin_treshold=4", "detection.spin_threshold"),  # misspelt
        ("detecton.spin_threshold=4", "detection.spin_threshold"),  # the section misspelt
        ("guardrails.outcome_repeats=3", "detection.outcome_repeats"),  # the wrong section
    ],
)
def test_a_misspelt_setting_offers_the_one_meant(given, meant):
    """Issue 47, item 12: ``--set`` with a misspelt key offered no "did you mean"."""
    with pytest.raises(ConfigurationError, match=rf": did you mean '{meant}'\?$"):
        with_overrides(SETTINGS, [given])
    with pytest.raises(ConfigurationError, match="sections are adapters, analyst, api"):
        with_overrides(SETTINGS, ["nothing.like_it=1"])  # nothing close: what there is


def test_times_and_offset_specs():
    now = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
    assert parse_time("2h", now) == int(now.timestamp() * 1000) - 7_200_000
    assert parse_time("2026-11-22T10:00:00Z", now) == int(now.timestamp() * 1000) - 7_200_000
    with pytest.raises(click.BadParameter, match="ISO-8601"):
        parse_time("yesterday", now)
    assert parse_offsets(("0:10-20,completions:3:5-",)) == {
        ("actions", 0): (10, 20),
        ("completions", 3): (5, None),
    }
    with pytest.raises(click.BadParameter, match="before the start"):
        parse_offsets(("1:20-10",))


def test_a_one_loop_audit_compares_only_that_loops_dead_letters():
    """A bad record of another loop on the same partition was reported as unexpected."""
    other = Rec(ACTIONS, 0, 3, 3000, b"other-loop", b"{not json")
    own = Rec(ACTIONS, 0, 4, 4000, b"L", b"{not json")
    whole = replayed([*(action(o) for o in range(3)), other, own])
    recorded = as_recorded(whole)
    recorded.dead_letters.update(whole.state.dead_letters)
    one = Replayer(SETTINGS, loop_id="L")
    for record in [*(action(o) for o in range(3)), other, own]:
        one.apply(record, inside=True)
    report = compare(one.state, recorded, AuditContext(one.stamps))
    assert report.agree and report.dead_letters == 1


def test_a_settings_change_within_the_range_is_noted_and_explains_its_differences():
    records = [action(o) for o in range(5)]
    replayer = replayed(records)
    recorded = as_recorded(replayed(records[:3]))  # first half under the same settings …
    stricter = with_overrides(SETTINGS, ["detection.spin_threshold=4"])
    later = replayed(records, stricter)  # … then a worker restarted with threshold 4
    for copies in as_recorded(later).outputs.values():
        if copies[0].output["trigger_event_id"] in {"L-3", "L-4"}:
            recorded.outputs[
                copies[0].output[("warning_id" if copies[0].kind == "warning" else "request_id")]
            ] = copies
    report = compare(replayer.state, recorded, AuditContext(replayer.stamps))
    assert any(
        "settings changed during the range" in n and "spin_threshold" in n for n in report.notes
    )
    assert report.differences
    assert all(d.explained and "spin_threshold 4 → 3" in d.explanation for d in report.differences)


def test_a_replay_from_mid_episode_reproduces_the_ladder():
    """The ladder's state is rebuilt from history, so the escalation a worker showed
    in the middle of an episode is reproduced step for step."""
    patterns = with_overrides(SETTINGS, ["detection.profile=patterns"])

    def same_call(offset: int) -> Rec:
        event = {"event_id": f"c-{offset}", "loop_id": "L", "occurred_at": float(offset)}
        event["payload"] = {"action_type": "tool", "params": {"q": 1}, "result": "same"}
        return Rec(ACTIONS, 0, offset, offset * 1000, b"L", codec.dumps(event))

    records = [same_call(o) for o in range(12)]
    full = replayed(records, patterns)
    steps = [r.output["step"] for r in full.state.outputs.values() if r.kind == "warning"]
    assert steps == ["warn", "escalate", "final", "stop"]
    recorded = as_recorded(full)
    later = replayed(records, patterns, start=6)  # the range starts after "escalate"
    report = compare(later.state, recorded, AuditContext(later.stamps))
    kept = [r.output["step"] for r in later.state.outputs.values() if r.kind == "warning"]
    assert kept == ["final", "stop"]
    assert report.agree  # outputs of events before the range are out of its scope


# -- the deployment's settings, read back from produced_by (issue 32, item 8) ---------------


def _outputs(replayer: Replayer) -> list[dict]:
    return [codec.loads(codec.dumps(r.output)) for r in replayer.state.outputs.values()]


def _searched(offset: int) -> Rec:
    """The same search with the same result each time."""
    event = {"event_id": f"L-{offset}", "loop_id": "L", "occurred_at": float(offset)}
    event["payload"] = {"action_type": "search", "params": {"q": "x"}, "result": "nothing"}
    return Rec(ACTIONS, 0, offset, offset * 1000, b"L", codec.dumps(event))


def test_a_replay_adopts_the_settings_the_outputs_record():
    from loopwarden.agents.audit.recorded_settings import stamps_of, with_recorded

    deployment = Settings(detection=DetectionSettings(profile="patterns", repeat_result_count=2))
    records = [_searched(o) for o in range(4)]
    recording = replayed(records, deployment)
    assert recording.state.outputs  # the deployment warned
    recorded = as_recorded(recording)
    shell = Settings()  # a shell without the deployment's variables
    adopted, notes = with_recorded(shell, stamps_of(_outputs(recording)))
    assert adopted.detection.profile == "patterns" and adopted.detection.repeat_result_count == 2
    assert adopted.limits.idle_loop_ttl_s == shell.limits.idle_loop_ttl_s
    assert "detection.profile" in notes[0] and "--current-settings" in notes[0]
    audit = replayed(records, adopted)
    report = compare(audit.state, recorded, AuditContext(audit.stamps))
    assert report.agree, render(report)
    # with the shell's own settings the same audit lists every output as a settings change
    what_if = replayed(records, shell)
    differing = compare(what_if.state, recorded, AuditContext(what_if.stamps))
    assert not differing.agree
    assert all("settings" in d.explanation for d in differing.differences)


def test_the_most_common_stamp_wins_and_unknown_names_are_said():
    from loopwarden.agents.audit.recorded_settings import stamps_of, with_recorded

    def stamp(fingerprint: str, value: int) -> dict:
        values = {"detection.spin_threshold": value, "detection.retired_knob": 1}
        return {"component": "monitor", "fingerprint": fingerprint, "settings": values}

    outputs = [{"produced_by": stamp("aaa", 4)}] * 3 + [{"produced_by": stamp("bbb", 5)}, {}]
    adopted, notes = with_recorded(Settings(), stamps_of(outputs))
    assert adopted.detection.spin_threshold == 4
    assert "monitor aaa" in notes[0]
    assert notes[1] == "recorded settings this version does not read: detection.retired_knob"


def test_a_changed_list_of_ids_says_which_ids_went_and_came():
    """Issue 32, item 8: a changed output showed truncated JSON of its event ids."""
    replayer = replayed([action(o) for o in range(4)])
    recorded = as_recorded(replayer)
    warnings = [c[0].output for c in recorded.outputs.values() if c[0].kind == "warning"]
    last = warnings[-1]
    last["event_ids"] = [*last["event_ids"][:-1], "L-a-much-longer-recorded-event-id-0042"]
    report = compare(replayer.state, recorded, AuditContext(replayer.stamps))
    (difference,) = report.differences
    assert "event_ids: −[L-a-much-longer-recorded-event-id-0042] +[L-3]" in difference.summary


def test_a_scope_with_nothing_in_it_is_not_an_agreement():
    """Issue 72.7: ``replay --loop no-such-loop`` said AGREE and exited 0."""
    report = compare(Replayer(SETTINGS).state, Recorded(), AuditContext({}))
    assert report.empty and not report.agree
    assert render(report).splitlines()[-1].startswith("NOTHING AUDITED")
    assert report.to_json_dict()["empty"] is True


def test_outputs_the_retention_deleted_are_counted_apart_not_as_missing():
    """Issue 72.7: warnings deleted by the topic's retention were 308 "unexplained"
    differences. Outputs whose place on their topic is gone are not compared; one the
    topic still should hold and does not is still missing."""
    replayer = replayed([action(o) for o in range(6)])  # warnings at counts 3..6
    outputs = list(replayer.state.outputs)
    recorded = Recorded()
    for n, output_id in enumerate(outputs[2:]):  # the two oldest are gone
        output = replayer.state.outputs[output_id].output
        recorded.add_output(Rec("out", 0, n, 0, None, codec.dumps(output)))
    context = AuditContext(replayer.stamps, unseen=frozenset(outputs[:2]))
    report = compare(replayer.state, recorded, context)
    assert report.agree and report.unseen == 2
    assert any("retention deleted" in note for note in report.notes)

    partly = compare(replayer.state, recorded, AuditContext(replayer.stamps))
    assert [d.status for d in partly.differences] == ["missing", "missing"]


def test_which_reproduced_outputs_fall_before_what_their_topic_still_holds():
    from loopwarden.agents.audit.driver import _beyond_retention
    from loopwarden.schemas.positions import default_partition
    from loopwarden.streams.tools.replay_reader import PartitionSpan

    replayer = replayed([action(o) for o in range(6)])  # occurred_at 0..5 s
    warnings = SETTINGS.topics.warnings
    partition = default_partition(b"L", SETTINGS.topics.partitions)
    counts = {warnings: SETTINGS.topics.partitions}
    trimmed = [PartitionSpan(warnings, partition, 2, 4)]  # offsets 0, 1 deleted
    kept_from = {(warnings, partition): 4_500}  # the first record still held: 4.5 s
    unseen = _beyond_retention(replayer, SETTINGS, trimmed, counts, kept_from)
    times = sorted(replayer.state.outputs[i].output["occurred_at"] for i in unseen)
    assert times == [2.0, 3.0, 4.0]  # the warnings at counts 3, 4, 5
    whole = [PartitionSpan(warnings, partition, 0, 4)]  # nothing deleted: all compared
    assert _beyond_retention(replayer, SETTINGS, whole, counts, kept_from) == frozenset()
    gone = _beyond_retention(
        replayer, SETTINGS, [PartitionSpan(warnings, partition, 4, 4)], counts, {}
    )
    on_warnings = {i for i, r in replayer.state.outputs.items() if r.output_name == "warnings"}
    assert gone == on_warnings and len(gone) == 4  # nothing left at all: every warning
