"""Record decoding: batches, dead letters with precise reasons, nothing lost."""

from one_record import process_one

from loopwarden.agents.monitor.declaration import LOOP_STATES
from loopwarden.agents.monitor.records import RecordProcessor
from loopwarden.schemas import codec
from loopwarden.schemas.dead_letter import SourcePosition
from loopwarden.schemas.records import decode_record
from loopwarden.settings import DetectionSettings

SEED = DetectionSettings(profile="seed")  # these tests use the seed's triggers

SRC = SourcePosition("actions", 3, 42, 1000)


def ev(i, loop="L", action_type="a", **payload):
    return {
        "event_id": f"e{i}",
        "loop_id": loop,
        "occurred_at": 1000 + i,
        "payload": {"action_type": action_type, **payload},
    }


def test_not_json_is_a_decode_dead_letter():
    out = decode_record(b"{nope", b"k", SRC, 1024)
    (letter,) = out.dead_letters
    assert letter.reason == "decode"
    assert "not valid JSON" in letter.message
    assert letter.value == b"{nope" and letter.key == b"k"
    assert (letter.source.partition, letter.source.offset) == (3, 42)


def test_a_scalar_is_a_decode_dead_letter():
    (letter,) = decode_record(b"42", None, SRC, 1024).dead_letters
    assert letter.reason == "decode" and "got int" in letter.message


def test_empty_value_is_a_dead_letter():
    (letter,) = decode_record(None, b"k", SRC, 1024).dead_letters
    assert letter.message == "empty record value"


def test_validation_names_every_wrong_field():
    bad = {"event_id": "x", "loop_id": "", "occurred_at": "yesterday", "payload": {"success": 3}}
    (letter,) = decode_record(codec.dumps(bad), None, SRC, 4096).dead_letters
    assert letter.reason == "validation"
    paths = {e.path for e in letter.errors}
    assert paths == {"loop_id", "occurred_at", "payload.action_type", "payload.success"}
    assert "payload.action_type: Field required" in letter.message


def test_oversized_single_event_is_rejected_without_decoding():
    big = codec.dumps(ev(1, params={"blob": "x" * 2000}))
    (letter,) = decode_record(big, None, SRC, 1024).dead_letters
    assert letter.reason == "too_large"
    assert letter.value == big
    assert "limits.max_event_bytes is 1024" in letter.message


def test_a_bad_element_of_a_batch_does_not_sink_the_rest():
    batch = [ev(1), {"event_id": "bad"}, ev(2, params={"blob": "x" * 2000}), ev(3)]
    out = decode_record(codec.dumps(batch), None, SRC, 1024)
    assert [(i, e.event_id) for i, e in out.events] == [(0, "e1"), (3, "e3")]
    assert [(d.reason, d.batch_index) for d in out.dead_letters] == [
        ("validation", 1),
        ("too_large", 2),
    ]
    assert codec.loads(out.dead_letters[0].value) == {"event_id": "bad"}


def test_task_events_are_passed_over_by_the_monitor_not_dead_lettered():
    start = {
        "event_id": "t1",
        "type": "task_start",
        "loop_id": "L",
        "occurred_at": 1,
        "payload": {},
    }
    end = {"event_id": "t2", "type": "task_end", "loop_id": "L", "occurred_at": 2}
    out = decode_record(codec.dumps([start, ev(1), end]), None, SRC, 4096)
    assert [(i, e.event_id) for i, e in out.events] == [(1, "e1")]
    assert out.dead_letters == []  # the experience agent validates (and dead-letters) them
    (letter,) = decode_record(codec.dumps({**ev(2), "type": "task"}), None, SRC, 4096).dead_letters
    assert letter.reason == "validation"


def test_processor_groups_by_loop_and_keeps_order():
    batch = [ev(i, loop="A" if i % 2 else "B") for i in range(6)]
    states = {}
    out = process_one(RecordProcessor(SEED), LOOP_STATES, codec.dumps(batch), None, SRC, states.get)
    assert set(out.states) == {"A", "B"}
    assert out.events == 6
    assert [w["loop_id"] for w in out.warnings] == ["B", "A"]
    assert out.states["A"].partition == 3


def test_processor_skips_a_replayed_record():
    states = {}
    processor = RecordProcessor(SEED)
    first = process_one(
        processor, LOOP_STATES, codec.dumps([ev(i) for i in range(3)]), None, SRC, states.get
    )
    states.update(first.states)
    again = process_one(
        processor, LOOP_STATES, codec.dumps([ev(i) for i in range(3)]), None, SRC, states.get
    )
    assert again.events == 0 and again.skipped == 3 and again.warnings == []


def test_a_rerouted_event_arrives_as_it_was_published_unknown_outcome_included():
    """A re-routed event is encoded as the client encodes it: an outcome that is not
    known (``success: null``) stays unknown, not the default (a success)."""
    from loopwarden.schemas.events import ActionEvent
    from loopwarden.schemas.positions import Origin
    from loopwarden.streams.runtime.state.reroute import reroute_of

    event = ActionEvent.model_validate(
        {
            "event_id": "e1",
            "loop_id": "l1",
            "occurred_at": 1.0,
            "published_at": 1.5,
            "payload": {"action_type": "shell", "success": None},
        }
    )
    for partition in range(2):
        moved = reroute_of(event, "elsewhere", 2, Origin(partition, 7, 0))
        if moved is not None:
            break
    assert moved is not None
    again = ActionEvent.model_validate(codec.loads(moved.value))
    assert again.payload.success is None and not again.payload.failed
    assert again.published_at == 1.5 and again == event
