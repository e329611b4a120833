"""Experience's advice replayed by the audit: each task start matched again against the store
as the recorded advice says it was (its ``read_versions``), on a real LanceDB directory
that has learnt more since; what cannot be replayed is set aside with the reason."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from consumed_records import Rec

from loopwarden.agents.audit.compare import AuditContext, AuditReport, compare
from loopwarden.agents.audit.recorded import Recorded
from loopwarden.agents.audit.replayer import Replayer
from loopwarden.agents.experience.agent import settle_with
from loopwarden.agents.experience.declaration import OPEN_TASKS
from loopwarden.agents.experience.records import TaskOutcome, TaskProcessor
from loopwarden.agents.experience.store import ExperienceStore
from loopwarden.agents.experience.tasks import OpenTask
from loopwarden.schemas import codec
from loopwarden.settings import Settings
from loopwarden.streams.client.event_builder import encode_event, make_action_event
from loopwarden.streams.client.tasks import task_end_event, task_start_event
from loopwarden.streams.runtime.state.harness import KeyedHarness

TASK = "search iPhone 15 on Taobao and order it"


def task_run(loop_id: str, success: bool) -> list[bytes]:
    """One task's records: its start, three steps, its end."""
    start = task_start_event(loop_id, TASK, app_name="taobao", event_id=f"start-{loop_id}")
    end = task_end_event(loop_id, success, event_id=f"end-{loop_id}")
    steps = [
        encode_event(
            make_action_event(loop_id, "search", params={"q": str(n)}, event_id=f"{loop_id}-{n}")
        )
        for n in range(1, 4)
    ]
    as_json = [codec.dumps(e.model_dump(mode="json", exclude_none=True)) for e in (start, end)]
    return [as_json[0], *steps, as_json[1]]


class Deployment:
    """A worker's experience (the kit's harness settling against the store) and the
    records it read, as the audit reads them back from the actions topic."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.store = ExperienceStore(settings.experience, settings.memory)
        processor = TaskProcessor.for_settings(settings)
        self.kit: KeyedHarness[OpenTask, TaskOutcome] = KeyedHarness(OPEN_TASKS, processor)
        processor.any_open = lambda: bool(self.kit.table)
        self.kit.settle = settle_with(self.store)
        self.records: list[Rec] = []

    def run(self, loop_id: str, success: bool) -> None:
        values = task_run(loop_id, success)
        self.kit.feed_batch([(value, loop_id.encode()) for value in values])
        topic = self.settings.topics.actions
        for value in values:
            offset = len(self.records)
            self.records.append(Rec(topic, 0, offset, offset, loop_id.encode(), value))

    @property
    def advice(self) -> list[dict[str, Any]]:
        return self.kit.named("advice")


def audit(deployment: Deployment, advice: list[dict[str, Any]] | None = None) -> AuditReport:
    """Replay every record and compare with ``advice`` (default: what was recorded)."""
    recorded_advice = deployment.advice if advice is None else advice
    by_start = {a["task_event_id"]: a for a in recorded_advice}
    replayer = Replayer(deployment.settings, recorded=by_start)
    for record in deployment.records:
        replayer.apply(record, inside=True)
    recorded = Recorded()
    for n, output in enumerate(recorded_advice):
        recorded.add_output(Rec("advice", 0, n, 0, None, codec.dumps(output)))
    return compare(replayer.state, recorded, AuditContext(replayer.stamps))


@pytest.fixture
def deployment(tmp_path: Path) -> Deployment:
    """Three runs of one task: explored and learnt, then replayed twice (the second after
    a failure lowered the experience's success rate)."""
    settings = Settings()
    memory = settings.memory.model_copy(
        update={"uri": str(tmp_path / "lancedb"), "embedder": "hashing"}
    )
    each = Deployment(settings.model_copy(update={"memory": memory}))
    each.run("loop-1", success=True)
    each.run("loop-2", success=False)
    each.run("loop-3", success=True)
    return each


def test_advice_names_the_versions_its_reads_saw(deployment: Deployment):
    first, second, _ = deployment.advice
    assert first["strategy"] == "reflexion_explore"
    assert second["strategy"] in {"direct_replay", "adaptive_replay"}
    assert set(first["read_versions"]) == {"exact", "semantic", "patterns"}
    assert second["read_versions"]["exact"] > first["read_versions"]["exact"]  # it learnt


def test_every_advice_is_reproduced_against_the_store_as_it_was(deployment: Deployment):
    deployment.run("loop-4", success=False)  # the store learns more after the recording
    report = audit(deployment)
    assert report.agree, report.differences
    totals = report.totals()
    assert totals.matched == 4 and totals.reproduced == 4 and report.not_replayed == 0


def test_a_task_start_before_the_range_is_history_and_not_an_input(deployment: Deployment):
    """Task starts are experience's own events (the monitor, the topic's owner, sees none):
    before the range they are counted as history, inside it as inputs."""
    replayer = Replayer(deployment.settings)
    first, *rest = deployment.records[:5]  # loop-1's run: its start, then steps and end
    replayer.apply(first, inside=False)
    for record in rest:
        replayer.apply(record, inside=True)
    state = replayer.state
    assert state.history_records == 1 and state.history_event_ids == {"start-loop-1"}
    assert state.history_loops == {"loop-1"}
    assert "start-loop-1" not in state.events and "end-loop-1" in state.events


def test_a_replay_against_todays_store_would_differ(deployment: Deployment):
    """The control: the same starts matched at the latest versions give other advice."""
    unpinned = [{k: v for k, v in a.items() if k != "read_versions"} for a in deployment.advice]
    replayer = Replayer(deployment.settings)  # nothing recorded: matched as the store is now
    for record in deployment.records:
        replayer.apply(record, inside=True)
    now = {r.output["task_event_id"]: r.output for r in replayer.state.outputs.values()}
    assert now["start-loop-1"]["strategy"] != unpinned[0]["strategy"]  # no longer explored


def test_changed_advice_is_a_difference(deployment: Deployment):
    recorded = [dict(a) for a in deployment.advice]
    recorded[1]["strategy"] = "guided_exploration"
    report = audit(deployment, recorded)
    (difference,) = report.differences
    assert difference.status == "changed" and difference.kind == "advice"
    assert "strategy: guided_exploration → " in difference.summary


def test_advice_recorded_without_versions_is_set_aside_with_the_reason(deployment: Deployment):
    recorded = [dict(a) for a in deployment.advice]
    del recorded[0]["read_versions"]
    report = audit(deployment, recorded)
    assert report.agree and report.not_replayed == 1
    assert any("without the store versions" in note for note in report.notes)


def test_a_version_cleaned_up_since_is_set_aside_with_the_reason(deployment: Deployment):
    table = deployment.store.table.table
    with pytest.warns(UserWarning, match="removes every version"):
        table.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)
    report = audit(deployment)
    assert report.agree and report.not_replayed >= 1
    assert any("no longer holds" in note for note in report.notes)


def test_a_missing_store_is_said_and_nothing_is_created(deployment: Deployment, tmp_path: Path):
    elsewhere = deployment.settings.memory.model_copy(update={"uri": str(tmp_path / "none")})
    deployment.settings = deployment.settings.model_copy(update={"memory": elsewhere})
    report = audit(deployment)
    assert report.not_replayed == 3
    assert any("cannot be read" in note for note in report.notes)
    assert not (tmp_path / "none").exists() or not any((tmp_path / "none").iterdir())
