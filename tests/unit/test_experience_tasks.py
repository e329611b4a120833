"""Experience's task tracking without a broker: records in, open tasks and the starts
and ends to match or learn out (:class:`~loopwarden.agents.experience.records.TaskTracker`)."""

from __future__ import annotations

from loopwarden.agents.experience.records import TaskTracker
from loopwarden.agents.experience.tasks import OpenTask
from loopwarden.schemas import codec
from loopwarden.schemas.dead_letter import SourcePosition
from loopwarden.schemas.tasks import TaskEnd, TaskStart
from loopwarden.settings import DetectionSettings, ExperienceSettings
from loopwarden.streams.client.event_builder import encode_event, make_action_event
from loopwarden.streams.client.tasks import task_end_event, task_start_event
from loopwarden.streams.runtime.runner import Record

TRACKER = TaskTracker(ExperienceSettings(max_steps=3), DetectionSettings())


def record(value: bytes, offset: int = 0, partition: int = 1) -> Record:
    return Record(value, None, [], SourcePosition("loopwarden.actions", partition, offset))


def task(event: TaskStart | TaskEnd) -> Record:
    return record(codec.dumps(event.model_dump(mode="json", exclude_none=True)))


def action(loop_id: str, n: int) -> Record:
    event = make_action_event(loop_id, "search", params={"q": str(n)}, event_id=f"{loop_id}-{n}")
    return record(encode_event(event), offset=n)


def read(records: list[Record], stored: dict[str, OpenTask] | None = None):
    stored = stored or {}
    return TRACKER.read(records, stored.get, lambda: bool(stored), stored.__contains__)


def test_a_start_opens_a_task_that_its_loops_actions_add_steps_to():
    start = task_start_event("loop-a", "book a flight", event_id="start-a")
    batch = read([task(start), action("loop-a", 1), action("loop-b", 1), action("loop-a", 2)])
    opened, partition = batch.tasks["loop-a"]
    assert opened is not None and partition == 1
    assert [s for s in opened.steps] and len(opened.steps) == 2  # loop-b has no task
    assert "loop-b" not in batch.tasks
    assert [(t.loop_id, type(e).__name__) for t, e in batch.lifecycle] == [("loop-a", "TaskStart")]


def test_the_step_log_is_capped_and_counts_what_it_dropped():
    start = task_start_event("loop-a", "book a flight", event_id="start-a")
    batch = read([task(start), *(action("loop-a", n) for n in range(1, 6))])
    opened = batch.tasks["loop-a"][0]
    assert opened is not None
    assert len(opened.steps) == 3 and opened.recorded == 5 and opened.truncated


def test_an_end_closes_a_stored_task_and_is_queued_with_it():
    start = task_start_event("loop-a", "book a flight", event_id="start-a")
    stored = {"loop-a": read([task(start)]).tasks["loop-a"][0]}
    end = task_end_event("loop-a", True, event_id="end-a")
    batch = read([action("loop-a", 1), task(end)], stored)
    assert batch.tasks["loop-a"] == (None, 1)
    ((closed, event),) = batch.lifecycle
    assert closed.loop_id == "loop-a" and len(closed.steps) == 1 and event.event_id == "end-a"


def test_a_redelivered_start_keeps_the_steps_so_far():
    start = task_start_event("loop-a", "book a flight", event_id="start-a")
    first = read([task(start), action("loop-a", 1)]).tasks["loop-a"][0]
    assert first is not None
    again = read([task(start)], {"loop-a": first}).tasks["loop-a"][0]
    assert again is first and len(again.steps) == 1


def test_an_end_without_a_task_changes_nothing_and_a_bad_task_event_is_a_dead_letter():
    end = task_end_event("loop-z", False, event_id="end-z")
    bad = codec.dumps({"type": "task_start", "loop_id": "loop-y", "payload": {}})
    batch = read([task(end), record(bad, offset=7)])
    assert batch.tasks == {} and batch.lifecycle == []
    (letter,) = batch.letters
    assert letter.source.offset == 7


def test_records_are_not_decoded_when_no_task_is_open_and_none_starts():
    batch = read([record(b"not json at all"), action("loop-a", 1)])
    assert batch.tasks == {} and batch.letters == []
