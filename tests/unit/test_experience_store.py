"""The experience store on a real LanceDB directory (hashing embedder: fast, deterministic)."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopwarden.agents.experience.steps import step_of
from loopwarden.agents.experience.store import DAY_S, ExperienceStore
from loopwarden.agents.experience.tasks import OpenTask
from loopwarden.agents.memory.embedding import HashingEmbedder
from loopwarden.schemas.tasks import TaskSpec
from loopwarden.settings import Settings
from loopwarden.streams.client.event_builder import make_action_event

SECRET = "hunter2-Zx9!"
SETTINGS = Settings()
NOW = 1_800_000_000.0


@pytest.fixture
def store(tmp_path: Path) -> ExperienceStore:
    memory = SETTINGS.memory.model_copy(update={"uri": str(tmp_path / "lancedb")})
    return ExperienceStore(SETTINGS.experience, memory, HashingEmbedder(256))


def run(loop_id: str, description: str, item: str, *, fail_at_end: bool = False) -> OpenTask:
    spec = TaskSpec(task_description=description, intent="shopping", app_name="taobao")
    task = OpenTask(loop_id, f"start-{loop_id}", spec.model_dump(mode="json"), NOW, NOW)
    calls = [
        ("open_app", {"app": "taobao"}, True),
        ("login", {"user": "ann", "password": SECRET}, True),
        ("input", {"text": item}, True),
        ("tap", {"target": "search"}, False),
        ("tap", {"target": "search"}, True),
        ("tap", {"target": "place order"}, not fail_at_end),
    ]
    for i, (action_type, params, ok) in enumerate(calls):
        event = make_action_event(loop_id, action_type, params=params, success=ok)
        task.add_step(event.event_id, step_of(event, SETTINGS.detection), NOW + i, 200)
    return task


def spec(description: str) -> TaskSpec:
    return TaskSpec(task_description=description, intent="shopping", app_name="taobao")


def test_a_run_learned_twice_is_stored_once_and_replayed_directly(store):
    task = run("l1", "search iPhone 15 on Taobao and order it", "iPhone 15")
    assert store.learn([(task, {"success": True})], NOW) == 1
    assert store.learn([(task, {"success": True})], NOW) == 0
    assert store.table.count() == 1
    result = store.match(spec("Search iPhone 15 on Taobao and order it."), "t2", "l2", NOW)
    assert result.match.strategy == "direct_replay"
    assert [s["action_type"] for s in result.advice["steps"]] == [
        "open_app",
        "login",
        "input",
        "tap",
        "tap",
    ]
    assert store.match(spec("search iPhone 15 on Taobao and order it"), "t3", "l3", NOW).cached


def test_secrets_in_a_steps_input_never_reach_the_table(store, tmp_path):
    store.learn(
        [(run("l1", "search iPhone 15 on Taobao and order it", "iPhone 15"), {"success": True})],
        NOW,
    )
    stored = store.table.all()[0]
    assert stored["steps"][1]["params"]["password"] == "[REDACTED]"
    files = [p for p in (tmp_path / "lancedb").rglob("*") if p.is_file()]
    assert files and not any(SECRET.encode() in p.read_bytes() for p in files)


def test_failing_replays_lower_the_success_rate_until_re_exploration(store):
    store.learn(
        [(run("l1", "search iPhone 15 on Taobao and order it", "iPhone 15"), {"success": True})],
        NOW,
    )
    experience_id = store.table.all()[0]["id"]
    description = "search iPhone 15 on Taobao and order it"
    strategies = []
    for n in range(3):
        strategies.append(store.match(spec(description), f"t{n}", "l", NOW).match.strategy)
        assert store.record_replay(experience_id, f"end-{n}", False, NOW + n) is not None
        assert store.record_replay(experience_id, f"end-{n}", False, NOW + n) is None  # once
    final = store.match(spec(description), "t9", "l", NOW)
    stored = store.table.get(experience_id)
    assert stored["success_rate"] == pytest.approx(0.343)
    assert (stored["use_count"], stored["replay_failures"]) == (3, 3)
    # 1.0 → 0.7 (no longer above 0.9: adapted, not replayed as is) → 0.49 (below 0.5: flagged)
    assert strategies == ["direct_replay", "adaptive_replay", "reflexion_explore"]
    assert final.match.strategy == "reflexion_explore" and final.advice["reexplore"]


def test_a_failed_run_is_kept_as_what_not_to_do(store):
    failed = run("l1", "search AirPods on Taobao and order them", "AirPods", fail_at_end=True)
    store.learn([(failed, {"success": False, "reason": "payment page loops"})], NOW)
    stored = store.table.all()[0]
    assert stored["outcome"] == "failure" and stored["steps"] == []
    advice = store.match(spec("search AirPods on Taobao and order them"), "t", "l", NOW).advice
    assert advice["strategy"] == "reflexion_explore"
    assert "tap on place order failed" in advice["avoid"]
    assert "the task failed: payment page loops" in advice["avoid"]


def test_maintenance_generalises_decays_and_a_second_cycle_changes_nothing(store):
    for n, item in enumerate(["iPhone 15", "AirPods", "a phone case"]):
        task = run(f"l{n}", f"search {item} on Taobao and order it", item)
        store.learn([(task, {"success": True})], NOW)
    old = run("old", "check the weather in Paris", "Paris")
    store.learn([(old, {"success": True})], NOW - 100 * DAY_S)
    old_id = next(r["id"] for r in store.table.all() if r["loop_id"] == "old")
    store.table.update(old_id, {"success_rate": 0.4})
    first = store.maintain(NOW)
    assert (first.patterns, first.decayed) == (1, 1)
    assert store.table.get(old_id) is None
    pattern = store.table.patterns()[0]
    assert pattern["template"] == "search {text} on Taobao and order it"
    assert len(pattern["success_cases"]) == 3
    second = store.maintain(NOW)
    assert (second.patterns, second.decayed) == (1, 0)
    assert store.table.patterns() == [pattern | {"updated_at": NOW}]
    guided = store.match(spec("search a charger on Taobao and order it"), "t", "l", NOW)
    assert guided.match.strategy == "guided_exploration"
    assert guided.advice["slots"] == {"text": "a charger"}
    assert guided.advice["pattern_id"] == pattern["id"]
    # the app's name is common to the cases: a constant of the pattern, filled as written
    assert guided.advice["steps"][0]["params"] == {"app": "taobao"}
    stats = store.stats()
    assert stats["total_experiences"] == 3 and stats["patterns"] == 1


def test_a_table_made_by_another_embedder_is_refused(tmp_path):
    from loopwarden.errors import ConfigurationError
    from loopwarden.storage.experience_table import ExperienceTable

    ExperienceTable(str(tmp_path), 8)
    with pytest.raises(ConfigurationError, match="holds 8-d vectors; the embedder gives 16-d"):
        ExperienceTable(str(tmp_path), 16)
