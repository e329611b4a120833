"""``loopwarden experience`` on a real LanceDB directory (hashing embedder)."""

from __future__ import annotations

import orjson
from click.testing import CliRunner

from loopwarden.agents.experience.store import ExperienceStore
from loopwarden.agents.experience.tasks import OpenTask
from loopwarden.cli import main
from loopwarden.settings import Settings

STEPS = [
    {"action_type": "open_app", "params": {"app": "taobao"}, "signature": "a", "success": True},
    {"action_type": "input", "params": {"text": "iPhone 15"}, "signature": "b", "success": True},
    {"action_type": "tap", "target": "place order", "params": {}, "signature": "c"},
]


def test_list_show_match_stats_and_maintain(tmp_path, monkeypatch):
    monkeypatch.setenv("LOOPWARDEN_MEMORY__URI", str(tmp_path / "db"))
    monkeypatch.setenv("LOOPWARDEN_MEMORY__EMBEDDER", "hashing")
    settings = Settings()
    store = ExperienceStore(settings.experience, settings.memory)
    spec = {"task_description": "search iPhone 15 on Taobao and order it", "app_name": "taobao"}
    task = OpenTask("loop-1", "start-1", spec, 0.0, 0.0, steps=list(STEPS), recorded=3)
    assert store.learn([(task, {"success": True})], 1_800_000_000.0) == 1
    stored_id = store.table.all()[0]["id"]
    runner = CliRunner()

    listed = runner.invoke(main, ["experience", "list"])
    assert listed.exit_code == 0, listed.output
    assert stored_id[:12] in listed.output and "3 steps" in listed.output

    shown = runner.invoke(main, ["experience", "show", stored_id[:8]])
    assert shown.exit_code == 0, shown.output
    assert orjson.loads(shown.output)["template"] == "search {text} on {app} and order it"
    missing = runner.invoke(main, ["experience", "show", "zzz"])
    assert missing.exit_code == 1 and "no experience with id 'zzz'" in missing.output  # as memory

    advice = runner.invoke(
        main, ["experience", "match", "search AirPods on Taobao and order it", "--json"]
    )
    assert advice.exit_code == 0, advice.output
    answer = orjson.loads(advice.output)
    assert answer["strategy"] == "guided_exploration"
    assert answer["steps"][1]["params"] == {"text": "AirPods"}

    stats = orjson.loads(runner.invoke(main, ["experience", "stats"]).output)
    assert stats["total_experiences"] == 1 and stats["avg_experience_size_kb"] > 0
    report = orjson.loads(runner.invoke(main, ["experience", "maintain"]).output)
    assert report["patterns"] == 0 and report["decayed"] == 0
