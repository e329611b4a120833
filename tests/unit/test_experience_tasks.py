"""Experience through the keyed-state kit without a broker: records in, open tasks (restored
from their snapshots, as a worker's table holds them) and the starts and ends to match or
learn out (:class:`~loopwarden.agents.experience.records.TaskProcessor`); the batch's
settling on a real LanceDB directory gives the advice."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopwarden.agents.experience.agent import settle_with
from loopwarden.agents.experience.declaration import OPEN_TASKS
from loopwarden.agents.experience.records import TaskOutcome, TaskProcessor
from loopwarden.agents.experience.store import ExperienceStore
from loopwarden.agents.experience.tasks import OpenTask
from loopwarden.agents.memory.embedding import HashingEmbedder
from loopwarden.schemas import codec
from loopwarden.schemas.tasks import TaskEnd, TaskStart
from loopwarden.settings import DetectionSettings, ExperienceSettings, Settings
from loopwarden.streams.client.event_builder import encode_event, make_action_event
from loopwarden.streams.client.tasks import task_end_event, task_start_event
from loopwarden.streams.runtime.state.harness import KeyedHarness

Harness = KeyedHarness[OpenTask, TaskOutcome]


def harness(any_open: bool | None = None) -> Harness:
    """A harness whose processor knows whether a task is open as the worker's does
    (from the table), or is told ``any_open``."""
    processor = TaskProcessor(ExperienceSettings(max_steps=3), DetectionSettings())
    kit: Harness = KeyedHarness(OPEN_TASKS, processor)
    processor.any_open = (lambda: any_open) if any_open is not None else lambda: bool(kit.table)
    return kit


def task(event: TaskStart | TaskEnd) -> bytes:
    return codec.dumps(event.model_dump(mode="json", exclude_none=True))


def action(loop_id: str, n: int, **fields: object) -> bytes:
    event = make_action_event(
        loop_id, "search", params={"q": str(n)}, event_id=f"{loop_id}-{n}", **fields
    )
    return encode_event(event)


def stored(kit: Harness, loop_id: str) -> OpenTask | None:
    return kit.load(loop_id)


START_A = task(task_start_event("loop-a", "book a flight", event_id="start-a"))


def test_a_start_opens_a_task_that_its_loops_actions_add_steps_to():
    kit = harness()
    for value in (START_A, action("loop-a", 1), action("loop-b", 1), action("loop-a", 2)):
        kit.feed(value, partition=1)
    opened = stored(kit, "loop-a")
    assert opened is not None and opened.partition == 1
    assert [step["action_type"] for step in opened.steps] == ["search", "search"]
    assert sorted(kit.table) == [b"loop-a"]  # loop-b has no task


def test_the_step_log_is_capped_and_counts_what_it_dropped():
    kit = harness()
    kit.feed(START_A)
    for n in range(1, 6):
        kit.feed(action("loop-a", n))
    opened = stored(kit, "loop-a")
    assert opened is not None
    assert len(opened.steps) == 3 and opened.recorded == 5 and opened.truncated


def test_an_end_closes_the_stored_task_and_is_handed_on_with_it():
    kit = harness()
    kit.feed(START_A)
    kit.feed(action("loop-a", 1))
    outcome = kit.feed(task(task_end_event("loop-a", True, event_id="end-a")))
    assert outcome.states == {"loop-a": None} and kit.table == {}
    ((closed, event),) = outcome.lifecycle
    assert closed.loop_id == "loop-a" and len(closed.steps) == 1 and event.event_id == "end-a"


def test_a_redelivered_start_keeps_the_steps_so_far():
    kit = harness()
    kit.feed(START_A)
    kit.feed(action("loop-a", 1))
    again = kit.feed(START_A).states["loop-a"]
    assert again is not None and again.event_id == "start-a" and len(again.steps) == 1
    kit.feed(action("loop-a", 1))  # a redelivered step is not a second one
    opened = stored(kit, "loop-a")
    assert opened is not None and opened.recorded == 1


def test_an_end_without_a_task_changes_nothing_and_a_bad_task_event_is_a_dead_letter():
    kit = harness()
    outcome = kit.feed(task(task_end_event("loop-z", False, event_id="end-z")))
    assert outcome.states == {} and outcome.lifecycle == []
    kit.feed(codec.dumps({"type": "task_start", "loop_id": "loop-y", "payload": {}}))
    (letter,) = kit.dead_letters
    assert letter.source.offset == 1 and kit.table == {}


def test_records_are_not_decoded_when_no_task_is_open_and_none_starts():
    kit = harness(any_open=False)
    asked: list[str] = []
    load = kit.core.load
    kit.core.load = lambda key: asked.append(key) or load(key)  # type: ignore[method-assign]
    kit.feed(b"not json at all")  # the monitor's to dead-letter, not experience's
    outcome = kit.feed(action("loop-a", 1))
    assert kit.dead_letters == [] and outcome.events == 0 and asked == []


def test_a_task_is_restored_from_its_snapshot_between_records():
    kit = harness()
    kit.feed(START_A)
    snapshot = kit.table[b"loop-a"]
    kit.feed(action("loop-a", 1, occurred_at=2_000_000_000.0))
    opened = stored(kit, "loop-a")
    assert kit.table[b"loop-a"] != snapshot  # the step reached the stored task
    assert opened is not None and opened.last_seen == 2_000_000_000.0
    assert OPEN_TASKS.peek_expiry(kit.table[b"loop-a"]) == (0, 2_000_000_000.0)


@pytest.fixture
def store(tmp_path: Path) -> ExperienceStore:
    settings = Settings()
    memory = settings.memory.model_copy(update={"uri": str(tmp_path / "lancedb")})
    return ExperienceStore(settings.experience, memory, HashingEmbedder(256))


def run_task(kit: Harness, loop_id: str, success: bool) -> None:
    """One task of a batch: start, three steps, end."""
    start = task_start_event(loop_id, "search iPhone 15 on Taobao and order it", app_name="taobao")
    end = task_end_event(loop_id, success, event_id=f"end-{loop_id}")
    steps = [action(loop_id, n, success=True) for n in range(1, 4)]
    kit.feed_batch([(value, loop_id.encode()) for value in (task(start), *steps, task(end))])


def test_a_batch_settles_against_the_store_explore_first_then_replay_what_it_learnt(store):
    kit = harness()
    kit.settle = settle_with(store)
    run_task(kit, "loop-1", success=True)
    (first,) = kit.named("advice")
    assert first["loop_id"] == "loop-1" and first["strategy"] == "reflexion_explore"
    assert kit.table == {} and store.stats()["total_experiences"] == 1  # ended, learnt

    run_task(kit, "loop-2", success=True)
    second = kit.named("advice")[1]
    assert second["strategy"] in {"direct_replay", "adaptive_replay"}
    assert second["experience_ids"] and second["experience_ids"][0] in {
        row["id"] for row in store.table.all(["id"])
    }


def test_a_start_settled_in_its_batch_keeps_the_advice_it_got_in_the_stored_task(store):
    kit = harness()
    kit.settle = settle_with(store)
    run_task(kit, "loop-1", success=True)
    start = task_start_event("loop-2", "search iPhone 15 on Taobao and order it", app_name="taobao")
    kit.feed_batch([(task(start), b"loop-2")])
    opened = stored(kit, "loop-2")
    assert opened is not None and opened.strategy == kit.named("advice")[-1]["strategy"]
    assert opened.advised_ids == kit.named("advice")[-1]["experience_ids"]
