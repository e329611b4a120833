"""An event whose id its loop has already applied is skipped with a word, never silently
(issue 32, item 1): counted per loop, listed in the record outcome, shown by ``detect``;
``publish`` gives lines without an id ids of their own run."""

from __future__ import annotations

import orjson
from click.testing import CliRunner

from loopwarden.agents.monitor.declaration import LOOP_STATES
from loopwarden.agents.monitor.loop_monitor import LoopMonitor
from loopwarden.agents.monitor.records import RecordProcessor
from loopwarden.agents.monitor.state import LoopState
from loopwarden.cli import main
from loopwarden.cli.options import publish_id_prefix
from loopwarden.schemas import codec
from loopwarden.schemas.dead_letter import SourcePosition
from loopwarden.schemas.events import validate_action
from loopwarden.schemas.flat_events import envelope_from_json
from loopwarden.schemas.positions import Origin
from loopwarden.streams.runtime.state.offline import OfflineStates


def event(event_id: str, n: int = 0):
    envelope = {"event_id": event_id, "loop_id": "L", "occurred_at": 1_700_000_000.0 + n}
    return validate_action({**envelope, "payload": {"action_type": "grep"}})


def test_a_replay_is_skipped_quietly_and_a_reused_id_is_counted():
    monitor, state = LoopMonitor(), LoopState("L")
    assert monitor.observe(state, event("a"), Origin(0, 0)) is not None
    assert monitor.observe(state, event("a"), Origin(0, 0)) is None  # redelivered: a replay
    assert state.duplicates == 0
    assert monitor.observe(state, event("a", 1), Origin(0, 7)) is None  # a new record, same id
    assert state.duplicates == 1
    assert LoopState.restore("L", state.snapshot()).duplicates == 1


def test_the_record_outcome_lists_each_duplicate_and_keeps_the_count():
    processor, states = RecordProcessor(), OfflineStates(LOOP_STATES)
    records = [codec.dumps(e.model_dump(mode="json")) for e in (event("a"), event("a", 1))]
    outcomes = []
    for offset, value in enumerate(records):
        outcome = states.apply(processor, value, b"L", SourcePosition("t", 0, offset))
        outcomes.append(outcome)
    assert outcomes[0].duplicates == []
    assert outcomes[1].duplicates == [("L", "a", 1)]
    assert outcomes[1].states["L"].duplicates == 1


def test_publish_ids_differ_from_run_to_run():
    line = {"loop_id": "L", "action_type": "grep"}
    first, second = publish_id_prefix(), publish_id_prefix()
    ids = {envelope_from_json(dict(line), 1, 0.0, p)["event_id"] for p in (first, second)}
    assert len(ids) == 2 and all(i.endswith("-line-1") for i in ids)
    assert envelope_from_json(dict(line), 1)["event_id"] == "line-1"  # detect: one file


def test_detect_says_how_many_it_skipped():
    lines = b"".join(
        orjson.dumps({"event_id": "same", "loop_id": "L", "action_type": "grep"}) + b"\n"
        for _ in range(3)
    )
    result = CliRunner().invoke(main, ["detect", "-"], input=lines)
    assert result.exit_code == 0, result.output
    assert "1 event(s), 1 loop(s), 0 warning(s), 0 bad line(s), 2 skipped" in result.stderr


def test_publish_help_explains_ids():
    text = CliRunner().invoke(main, ["publish", "--help"]).output
    assert "event_id" in text and "idempotent" in text
