"""Experience replay's pure logic (seed 004): cleanup, slots, similarity, routing, EMA."""

from __future__ import annotations

import pytest

from loopwarden.agents.experience.advice import build_advice
from loopwarden.agents.experience.generalise import generalise, pattern_of
from loopwarden.agents.experience.matching import (
    choose,
    composite,
    description_hash,
    ema,
    version_mismatch,
)
from loopwarden.agents.experience.slots import abstract, fill, match_template
from loopwarden.agents.experience.steps import clean_path, step_of, what_failed
from loopwarden.agents.experience.tasks import OpenTask
from loopwarden.schemas.tasks import Advice, TaskSpec
from loopwarden.settings import ExperienceSettings, Settings
from loopwarden.streams.client.event_builder import make_action_event

SETTINGS = ExperienceSettings()
DETECTION = Settings().detection


def steps(*calls: tuple) -> list[dict]:
    out = []
    for call in calls:
        action_type, params, *rest = call
        success = rest[0] if rest else True
        event = make_action_event("loop", action_type, params=params, success=success)
        out.append(step_of(event, DETECTION))
    return out


def experience(**fields) -> dict:
    base = {
        "id": "e1",
        "task_description": "search iPhone 15 on Taobao and order it",
        "template": "search {text} on Taobao and order it",
        "slots": {"text": "iPhone 15"},
        "steps": [{"action_type": "input", "params": {"text": "{text}"}, "key_point": "input"}],
        "outcome": "success",
        "success_rate": 1.0,
        "use_count": 0,
        "app_name": "taobao",
        "intent": "shopping",
        "app_version": "10.2",
    }
    return {**base, **fields}


TASK = TaskSpec(
    task_description="search iPhone 15 on Taobao and order it",
    intent="shopping",
    app_name="taobao",
    app_version="10.2",
)


# -- cleanup (§3.4 step 1) -------------------------------------------------------------------


def test_cleanup_drops_failures_waits_back_outs_and_repeats_and_marks_key_points():
    path = clean_path(
        steps(
            ("open_app", {"app": "taobao"}),
            ("wait", {"seconds": 2}),
            ("tap", {"target": "search"}, False),  # failed, then retried
            ("tap", {"target": "search"}),
            ("tap", {"target": "search"}),  # repeated click
            ("tap", {"target": "banner ad"}),
            ("back", {}),  # backs out of the banner
            ("input", {"text": "iPhone 15"}),
            ("tap", {"target": "place order"}),
        ),
        SETTINGS,
    )
    assert [(s["action_type"], s["params"].get("target")) for s in path.steps] == [
        ("open_app", None),
        ("tap", "search"),
        ("input", None),
        ("tap", "place order"),
    ]
    assert [s["key_point"] for s in path.steps] == ["navigation", None, "input", "confirmation"]
    assert path.dropped == {"wait": 1, "failed": 1, "repeat": 1, "back_out": 1, "backed_out_of": 1}


def test_a_repeat_that_is_not_immediate_is_kept():
    path = clean_path(steps(("scroll", {}), ("tap", {"target": "x"}), ("scroll", {})), SETTINGS)
    assert [s["action_type"] for s in path.steps] == ["scroll", "tap", "scroll"]


def test_what_failed_names_errors_repeats_and_the_reason():
    recorded = steps(("pay", {"card": "visa"}, False), *[("refresh", {})] * 3)
    recorded[0]["error"] = "card declined"
    lines = what_failed(recorded, "the loop spun")
    assert lines == [
        "pay failed: card declined",
        "refresh repeated 3 times without progress",
        "the task failed: the loop spun",
    ]


# -- slots --------------------------------------------------------------------------------------


def test_values_from_the_description_become_slots_and_controls_do_not():
    template, templated, values = abstract(
        "Search iPhone 15 on Taobao and order it",
        [
            {"action_type": "open_app", "params": {"app": "taobao"}},
            {"action_type": "input", "params": {"text": "iPhone 15"}},
            {"action_type": "tap", "target": "search", "params": {"target": "search"}},
        ],
    )
    assert template == "Search {text} on {app} and order it"
    assert values == {"app": "taobao", "text": "iPhone 15"}
    assert templated[0]["params"] == {"app": "{app!lower}"}  # the step wrote it lower-case
    assert templated[1]["params"] == {"text": "{text}"}
    assert templated[2]["params"] == {"target": "search"}  # a control's name, not a slot


def test_the_longest_value_wins_and_a_repeated_value_is_one_slot():
    template, _, values = abstract(
        "compare iPhone 15 Pro with iPhone 15",
        [
            {"action_type": "input", "params": {"query": "iPhone 15 Pro"}},
            {"action_type": "input", "params": {"query": "iPhone 15"}},
            {"action_type": "input", "params": {"again": "iPhone 15 Pro"}},
        ],
    )
    assert template == "compare {query} with {query_2}"
    assert values == {"query": "iPhone 15 Pro", "query_2": "iPhone 15"}


def test_a_template_matches_a_new_item_and_fills_the_steps():
    values = match_template(
        "search {text} on {app} and order it", "Search AirPods on JD and order it."
    )
    assert values == {"text": "AirPods", "app": "JD"}
    assert match_template("search {text} on {app} and order it", "book a flight") is None
    assert match_template("no slots here", "no slots here") is None
    filled = fill(
        [
            {
                "action_type": "input",
                "target": "{app} box",
                "params": {"q": "{text}", "n": "{count}"},
            }
        ],
        values,
    )
    assert filled[0]["params"] == {"q": "AirPods", "n": "{count}"}
    assert filled[0]["target"] == "JD box"
    assert filled[0]["open_slots"] == ["count"]
    cased = fill([{"action_type": "open_app", "params": {"app": "{app!lower}"}}], {"app": "JD"})
    assert cased[0]["params"] == {"app": "jd"}


# -- similarity, levels, EMA, versions ------------------------------------------------------------


def test_description_hash_ignores_case_punctuation_and_spacing():
    assert description_hash("Search  iPhone 15, on Taobao!") == description_hash(
        "search iphone 15 on taobao"
    )
    assert description_hash("search iPhone 15") != description_hash("search iPhone 16")


def test_composite_similarity_is_the_seeds_weighted_sum():
    assert composite(1.0, 1.0, 1.0, SETTINGS) == pytest.approx(1.0)
    assert composite(0.8, 1.0, 0.0, SETTINGS) == pytest.approx(0.7 * 0.8 + 0.15)


def test_weights_must_sum_to_one():
    with pytest.raises(ValueError, match="must be 1"):
        ExperienceSettings(semantic_weight=0.8)


@pytest.mark.parametrize(("rate", "strategy"), [(0.91, "direct_replay"), (0.9, "adaptive_replay")])
def test_level_one_needs_a_success_rate_above_0_9(rate, strategy):
    known = experience(success_rate=rate)
    match = choose(TASK, [known], [(known, 1.0)], [], SETTINGS)
    assert match.strategy == strategy


def test_level_two_boundaries_semantic_threshold_and_composite():
    other = TaskSpec(
        task_description="order an iPhone 15 from Taobao", intent="shopping", app_name="taobao"
    )
    known = experience()
    # composite = 0.7·s + 0.3 (same app and intent): above 0.85 needs s > 0.7857
    assert choose(other, [], [(known, 0.79)], [], SETTINGS).strategy == "adaptive_replay"
    assert choose(other, [], [(known, 0.78)], [], SETTINGS).strategy == "reflexion_explore"
    # another app: 0.7·s + 0.15 can never pass 0.85 but for s = 1
    elsewhere = TaskSpec(task_description=other.task_description, intent="shopping", app_name="jd")
    assert choose(elsewhere, [], [(known, 0.99)], [], SETTINGS).strategy == "reflexion_explore"
    # below the semantic threshold a candidate is not scored at all
    lenient = ExperienceSettings(adaptive_threshold=0.5)
    assert choose(other, [], [(known, 0.749)], [], lenient).strategy == "reflexion_explore"
    assert choose(other, [], [(known, 0.75)], [], lenient).strategy == "adaptive_replay"


def test_a_new_item_in_a_known_pattern_is_guided_with_its_slot_filled():
    new_item = TaskSpec(
        task_description="search AirPods on Taobao and order it",
        intent="shopping",
        app_name="taobao",
    )
    match = choose(new_item, [], [(experience(), 0.95)], [], SETTINGS)
    assert match.strategy == "guided_exploration"
    assert match.slots == {"text": "AirPods"}
    advice = build_advice("t1", "loop", match, [], 0.0)
    assert advice["steps"][0]["params"] == {"text": "AirPods"}
    Advice.model_validate(advice)


def test_an_experience_below_0_5_is_not_replayed_and_asks_for_re_exploration():
    failing = experience(success_rate=0.49)
    match = choose(TASK, [failing], [(failing, 1.0)], [], SETTINGS)
    assert match.strategy == "reflexion_explore"
    assert match.reexplore


def test_ema_moves_the_success_rate_by_alpha():
    assert ema(1.0, False, 0.3) == pytest.approx(0.7)
    assert ema(0.7, False, 0.3) == pytest.approx(0.49)
    assert ema(0.49, True, 0.3) == pytest.approx(0.643)


def test_another_app_version_makes_the_replay_experimental():
    known = experience(app_version="10.1")
    assert version_mismatch(TASK, known)
    match = choose(TASK, [known], [], [], SETTINGS)
    assert match.strategy == "direct_replay" and match.experimental
    assert "experimental" in build_advice("t", "l", match, [], 0.0)["timeline_message"]
    assert not version_mismatch(TASK, experience(app_version=None))
    assert not version_mismatch(TASK, experience())


# -- generalisation ------------------------------------------------------------------------------


def test_similar_cases_generalise_into_a_pattern_with_named_slots():
    cases = [
        experience(
            id=f"e{i}",
            task_description=f"search {item} on Taobao and order it",
            slots={"text": item},
            vector=[1.0, 0.0],
        )
        for i, item in enumerate(["iPhone 15", "AirPods", "a USB-C cable"])
    ]
    pattern = pattern_of(cases)
    assert pattern is not None
    assert pattern["template"] == "search {text} on Taobao and order it"
    assert pattern["success_cases"] == ["e0", "e1", "e2"]
    assert generalise(cases, SETTINGS)[0]["template"] == pattern["template"]
    # one case is not a cluster; another app is another group
    assert generalise(cases[:1], SETTINGS) == []
    other_app = [cases[0], {**cases[1], "app_name": "jd"}]
    assert generalise(other_app, SETTINGS) == []


def test_open_task_keeps_a_capped_log_and_skips_redelivered_steps():
    task = OpenTask("loop", "start", {"task_description": "x"}, 0.0, 0.0)
    for i in range(5):
        assert task.add_step(f"e{i}", {"n": i}, float(i), max_steps=3)
    assert not task.add_step("e4", {"n": 4}, 4.0, max_steps=3)
    assert [s["n"] for s in task.steps] == [2, 3, 4]
    assert task.recorded == 5 and task.truncated
    assert OpenTask.restore(task.snapshot()) == task


def test_task_events_are_validated_and_redacted_at_the_edge():
    from loopwarden.errors import EventValidationError
    from loopwarden.streams.client.tasks import task_end_event, task_start_event

    start = task_start_event("loop", "log in with password: hunter2 and order", app_name="x")
    assert start.payload.task_description == "log in with password: [REDACTED] and order"
    end = task_end_event("loop", False, reason="card 4111 1111 1111 1111 declined")
    assert "4111" not in end.payload.reason
    with pytest.raises(EventValidationError, match=r"payload\.feedback_score"):
        task_end_event("loop", True, feedback_score=2.0)


def test_experience_metrics_count_matches_replays_and_the_hit_rate():
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from loopwarden.agents.experience.metrics import ExperienceMetrics

    reader = InMemoryMetricReader()
    metrics = ExperienceMetrics(MeterProvider(metric_readers=[reader]).get_meter("test"))
    assert metrics.hit_rate is None
    for strategy in ("direct_replay", "reflexion_explore", "guided_exploration", "adaptive_replay"):
        metrics.matched(strategy, 0.01)
    metrics.replayed(False)
    metrics.stats = {"total_experiences": 7, "avg_experience_size_kb": 1.5}
    assert metrics.hit_rate == 0.75
    exported = {
        m.name: m
        for rm in reader.get_metrics_data().resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
    }
    matches = {
        p.attributes["strategy"]: p.value
        for p in exported["loopwarden.experience.matches"].data.data_points
    }
    assert matches["reflexion_explore"] == 1 and sum(matches.values()) == 4
    assert exported["loopwarden.experience.total"].data.data_points[0].value == 7
    replays = exported["loopwarden.experience.replays"].data.data_points[0]
    assert (replays.attributes["outcome"], replays.value) == ("failure", 1)
