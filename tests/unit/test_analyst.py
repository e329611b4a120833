"""The analyst's deterministic analysis and texts (model answers: test_llm_client)."""

from loopwarden.agents.analyst.analyst import ReflectionAnalyst
from loopwarden.agents.analyst.heuristics import param_similarity, reflect, semantic_spin


def action(action_type="search", params=None, error=None):
    return {
        "event_id": "e",
        "action_type": action_type,
        "params": params or {},
        "iteration": 1,
        "error_message": error,
        "occurred_at": 1.0,
    }


def test_near_identical_parameters_are_a_logic_spin():
    actions = [
        action(params={"q": "release notes v1.2"}),
        action(params={"q": "release notes v1.3"}),
        action(params={"q": "release notes v1.2"}),
    ]
    verdict = semantic_spin(actions, similarity=0.9)
    assert verdict.is_spinning and "near-identical" in verdict.reason
    assert verdict.suggestions[0] == "Try a different action type"


def test_varied_parameters_are_not():
    actions = [
        action(params={"q": "weather"}),
        action(params={"path": "/etc/hosts", "n": 5}),
        action(params={"url": "https://example.org"}),
    ]
    assert not semantic_spin(actions).is_spinning
    assert param_similarity({"a": 1}, {"a": 1}) == 1.0


def test_a_repeated_identical_error_is_a_spin_whatever_the_actions():
    actions = [
        action("shell", {"cmd": "cat /etc/shadow"}, "permission denied"),
        action("read_file", {"path": "/etc/shadow"}, "permission denied"),
    ]
    verdict = semantic_spin(actions)
    assert verdict.is_spinning and "permission denied" in verdict.reason


def test_a_failed_action_gets_the_failure_recommendations():
    verdict = reflect({"action_type": "deploy", "success": False, "error_message": "exit 1"})
    assert "exit 1" in verdict.suggestions[0]


async def test_without_an_endpoint_the_analysis_is_heuristic():
    request = {
        "request_id": "r1",
        "kind": "action_reflection",
        "loop_id": "L",
        "level": "critical",
        "trigger_event_id": "e1",
        "occurred_at": 1.0,
        "memory_budget_bytes": 10240,
        "memory_query": "q",
        "recent_actions": [],
        "reflection": {"action_type": "deploy", "success": False, "error_message": "exit 1"},
    }
    analysis = await ReflectionAnalyst().analyze(request)
    assert (analysis["analysis"], analysis["fallback_reason"]) == ("heuristic", None)
    assert analysis["timeline_message"].startswith("✗ [CRITICAL REFLECTION] Action 'deploy' FAILED")
    assert "MANDATORY RECOMMENDATIONS FOR FUTURE ACTIONS:" in analysis["timeline_message"]
    assert analysis["memory_context"] == ""  # the memory seam, empty for now


async def test_the_analysis_next_actions_are_in_the_text_the_agent_reads():
    request = {
        "request_id": "r2",
        "kind": "semantic_spin_check",
        "loop_id": "L",
        "level": "standard",
        "trigger_event_id": "e3",
        "occurred_at": 1.0,
        "recent_actions": [action(params={"q": "release notes v1.2"}) for _ in range(3)],
        "prompt": "is it spinning?",
    }
    analysis = await ReflectionAnalyst().analyze(request)
    assert analysis["is_spinning"] and analysis["next_actions"]
    for step in analysis["next_actions"]:
        assert f"- {step}" in analysis["timeline_message"]
    assert "**Do next**:" in analysis["timeline_message"]
