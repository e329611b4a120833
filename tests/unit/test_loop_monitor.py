"""The pure loop monitor: findings, ids, state bounds, idempotency."""

from loopwarden.agents.monitor.loop_monitor import LoopMonitor
from loopwarden.agents.monitor.state import LoopState
from loopwarden.agents.spin import texts
from loopwarden.schemas import codec
from loopwarden.schemas.levels import ReflectionLevel
from loopwarden.schemas.positions import Origin
from loopwarden.schemas.reflection import ReflectionRequest, ReflectionRequestKind
from loopwarden.schemas.warnings import LoopWarning, WarningKind
from loopwarden.settings import DetectionSettings


class Typed:
    """Findings with their dicts parsed into the public models (which also checks the shape)."""

    def __init__(self, findings):
        self.level = findings.level
        self.raw = findings
        self.warnings = [LoopWarning.model_validate(w) for w in findings.warnings]
        self.requests = [ReflectionRequest.model_validate(r) for r in findings.requests]


def run(events, settings=None, state=None):
    monitor = LoopMonitor(settings or DetectionSettings(profile="seed"))
    state = state or LoopState(events[0].loop_id)
    findings = [monitor.observe(state, e, Origin(0, i)) for i, e in enumerate(events)]
    return state, [Typed(f) if f is not None else None for f in findings]


def test_three_same_actions_warn_with_the_causing_event_ids(make_action):
    events = [make_action(action_type="search") for _ in range(3)]
    _, findings = run(events)
    assert findings[0].warnings == [] and findings[1].warnings == []
    (warning,) = findings[2].warnings
    assert warning.kind is WarningKind.ACTION_TYPE_SPIN
    assert warning.event_ids == [e.event_id for e in events]
    assert warning.consecutive_count == 3
    assert warning.level is ReflectionLevel.MINIMAL  # iteration 3 is not > 5
    assert warning.suggestions == list(texts.LAYER1_SUGGESTIONS["en"])
    assert "[SPIN DETECTED]" in warning.timeline_message
    assert "1. Try a different action type" in warning.timeline_message


def test_spin_after_iteration_five_is_standard_and_asks_for_reflection(make_action):
    events = [make_action(action_type=t) for t in ["a", "b", "c", "d", "x", "x", "x"]]
    _, findings = run(events)
    last = findings[-1]
    assert last.level is ReflectionLevel.STANDARD
    kinds = [r.kind for r in last.requests]
    assert kinds == [
        ReflectionRequestKind.SEMANTIC_SPIN_CHECK,
        ReflectionRequestKind.ACTION_REFLECTION,
    ]
    semantic, reflection = last.requests
    assert [a.event_id for a in semantic.recent_actions] == [e.event_id for e in events[-3:]]
    assert "SPIN 的定义" in semantic.prompt
    assert reflection.memory_budget_bytes == 2048
    assert reflection.reflection.is_spinning
    assert reflection.reflection.environmental_impact.state_changes == ["loop continued"]


def test_per_loop_threshold_from_an_event_sticks_to_the_loop(make_action):
    events = [make_action(action_type="a", spin_threshold=5)] + [
        make_action(action_type="a") for _ in range(4)
    ]
    state, findings = run(events)
    assert [bool(f.warnings) for f in findings] == [False, False, False, False, True]
    assert state.spin_threshold == 5
    assert len(findings[-1].warnings[0].event_ids) == 5


def test_failed_action_is_critical_with_mandatory_recommendations(make_action):
    event = make_action(action_type="shell", success=False, error_message="permission denied")
    _, (findings,) = run([event])
    assert findings.level is ReflectionLevel.CRITICAL
    (warning,) = findings.warnings
    assert warning.kind is WarningKind.ACTION_FAILED
    assert warning.reason == "permission denied"
    assert warning.timeline_message.startswith("✗ [CRITICAL REFLECTION] Action 'shell' FAILED")
    assert "MANDATORY RECOMMENDATIONS FOR FUTURE ACTIONS:\n1. " in warning.timeline_message
    (request,) = findings.requests
    assert request.memory_budget_bytes == 10240
    assert request.memory_query.endswith("permission denied")
    assert request.reflection.success is False


def test_code_edit_spin_carries_the_seed_prompt_with_the_line_range(make_action):
    edits = [(40, 42), (41, 43), (40, 41), (42, 44)]
    events = []
    for start, end in edits:
        events.append(
            make_action(
                loop_id="ed", action_type="modify_code", edit={"start_line": start, "end_line": end}
            )
        )
        events.append(make_action(loop_id="ed", action_type="run_tests"))
    _, findings = run(events, DetectionSettings(profile="seed", language="zh"))
    warnings = [w for f in findings for w in f.warnings]
    (warning,) = warnings
    assert warning.kind is WarningKind.CODE_EDIT_SPIN
    assert warning.reason == "检测到在第 42-44 行附近连续 3 次小幅修改代码，可能陷入了修改循环"
    assert warning.timeline_message.startswith("【代码修改空转警告】\n\n" + warning.reason)
    assert "本次修改第 42-44 行的目标是什么？" in warning.timeline_message
    assert warning.event_ids == [e.event_id for e in events[0::2]]


def test_zh_spin_timeline_is_the_seed_text(make_action):
    events = [make_action(action_type="grep") for _ in range(3)]
    _, findings = run(events, DetectionSettings(profile="seed", language="zh"))
    assert findings[-1].warnings[0].timeline_message == (
        "⚠️ [SPIN DETECTED] 检测到 AI Agent 陷入循环\n\n"
        "**Action 类型**: grep\n"
        "**原因**: 连续 3 次执行相同类型的 Action: grep\n\n"
        "**建议**:\n"
        "1. 尝试使用不同的 Action 类型\n2. 检查任务目标是否明确\n3. 考虑是否需要用户澄清\n"
    )


def test_warning_ids_are_deterministic(make_action):
    events = [make_action(action_type="a", event_id=f"fixed-{i}") for i in range(3)]
    _, first = run(events)
    _, second = run(events)
    assert first[-1].warnings[0].warning_id == second[-1].warnings[0].warning_id
    other = [make_action(action_type="a", event_id=f"other-{i}") for i in range(3)]
    _, third = run(other)
    assert third[-1].warnings[0].warning_id != first[-1].warnings[0].warning_id


def test_a_reprocessed_position_is_skipped(make_action):
    monitor = LoopMonitor(DetectionSettings(profile="seed"))
    state = LoopState("loop-1")
    events = [make_action(action_type="a") for _ in range(3)]
    for offset, event in enumerate(events[:2]):
        monitor.observe(state, event, Origin(0, offset))
    assert monitor.observe(state, events[1], Origin(0, 1)) is None  # replay after a restart
    assert state.seq == 2
    findings = monitor.observe(state, events[2], Origin(0, 2))
    assert findings.warnings[0]["consecutive_count"] == 3


def test_a_republished_event_id_is_skipped(make_action):
    monitor = LoopMonitor(DetectionSettings(profile="seed"))
    state = LoopState("loop-1")
    event = make_action(action_type="a")
    assert monitor.observe(state, event, Origin(0, 0)) is not None
    assert monitor.observe(state, event, Origin(0, 5)) is None
    assert state.seq == 1


def test_window_and_reflection_cache_are_bounded(make_action):
    events = [make_action(action_type="a", success=False, error_message="x") for _ in range(30)]
    state, _ = run(events, DetectionSettings(profile="seed", action_window=10))
    assert len(state.window) == 10
    assert len(state.reflections) == 3
    assert state.iteration == 30


def test_large_params_are_not_kept_in_state(make_action):
    event = make_action(params={"blob": "x" * 5000})
    state, _ = run([event])
    assert "_omitted" in state.window[0]["params"]


def test_reflection_disabled_per_loop(make_action):
    events = [make_action(success=False, reflection_enabled=False), make_action(success=False)]
    _, findings = run(events)
    assert [f.level for f in findings] == [ReflectionLevel.NONE, ReflectionLevel.NONE]
    assert all(not f.warnings for f in findings)


def test_state_snapshot_round_trip_continues_detection(make_action):
    events = [make_action(action_type="a") for _ in range(3)]
    state, _ = run(events[:2])
    restored = LoopState.restore(state.loop_id, state.snapshot())
    assert restored == state
    findings = LoopMonitor(DetectionSettings(profile="seed")).observe(
        restored, events[2], Origin(0, 2)
    )
    assert findings.warnings[0]["event_ids"] == [e.event_id for e in events]


def test_outputs_are_exactly_the_public_models_json(make_action):
    events = [make_action(action_type="a", success=False, error_message="e") for _ in range(7)]
    events.append(make_action(action_type="edit", edit={"start_line": 1, "end_line": 2}))
    _, findings = run(events)
    for typed in findings:
        for raw, model in zip(typed.raw.warnings, typed.warnings, strict=True):
            assert model.model_dump(mode="json") == raw
        for raw, model in zip(typed.raw.requests, typed.requests, strict=True):
            assert model.model_dump(mode="json") == raw


def test_semantic_checks_run_when_layer_one_fires_and_every_n_after(make_action):
    events = [make_action(action_type="a") for _ in range(10)]
    _, findings = run(events)
    semantic = [
        i + 1
        for i, f in enumerate(findings)
        if any(r.kind is ReflectionRequestKind.SEMANTIC_SPIN_CHECK for r in f.requests)
    ]
    assert semantic == [3, 6, 9]
    _, findings = run(events, DetectionSettings(profile="seed", semantic_check_every=1))
    assert (
        sum(
            r.kind is ReflectionRequestKind.SEMANTIC_SPIN_CHECK
            for f in findings[:5]
            for r in f.requests
        )
        == 3
    )


def test_failures_become_memory_writes_in_the_seeds_contextual_form(make_action):
    """The lesson follows detection.language (issue 13: it was Chinese whatever the
    setting); ``zh`` keeps the seed's text verbatim."""
    from loopwarden.schemas.memory import validate_memory_write

    event = make_action(
        loop_id="L9",
        action_type="shell",
        params={"cmd": "make"},
        success=False,
        error_message="exit 2",
    )
    (_, (chinese,)) = run([event], DetectionSettings(profile="seed", language="zh"))
    assert validate_memory_write(chinese.raw.lessons[0]).payload.content == (
        'ReAct迭代 1/L9: action shell {"cmd":"make"} -> failed: exit 2\n'
        "任务状态: failed\n完成状态: false\n原因: exit 2"
    )
    _, (typed,) = run([event])
    (write,) = typed.raw.lessons
    memory = validate_memory_write(write)
    assert memory.payload.content == (
        'ReAct iteration 1/L9: action shell {"cmd":"make"} -> failed: exit 2\n'
        "Task status: failed\nCompleted: false\nReason: exit 2"
    )
    assert memory.payload.tags == ["learning_from_failure", "shell"]
    assert memory.payload.source_event_id == event.event_id
    _, (again,) = run([event])
    assert again.raw.lessons[0]["event_id"] == write["event_id"]  # idempotent id


def test_a_failure_is_learnt_once_per_loop(make_action):
    """Issue 71: a loop stuck on one failure made a lesson of every attempt (a third of
    the real runs' failures), each embedded by the memory role. The same call failing the
    same way (ids, times and numbers aside) is one lesson; another error is another, and
    what a loop learnt survives its snapshot."""

    def failure(error: str, cmd: str = "make"):
        return make_action(
            loop_id="L7",
            action_type="shell",
            params={"cmd": cmd},
            success=False,
            error_message=error,
        )

    events = [
        failure("exit 2 at 09:01:02, pid 4411"),
        failure("exit 2 at 09:01:07, pid 4419"),  # the same failure again
        failure("missing target 'install'"),  # another error
        failure("exit 2 at 09:02:00, pid 4502", cmd="make test"),  # another call
    ]
    monitor = LoopMonitor(DetectionSettings(profile="seed"))
    state = LoopState("L7")
    taught = [len(monitor.observe(state, event).lessons) for event in events[:2]]
    state = LoopState.restore("L7", state.snapshot())
    taught += [len(monitor.observe(state, event).lessons) for event in events[2:]]
    assert taught == [1, 0, 1, 1]
    again = failure("exit 2 at 10:00:00, pid 9")
    assert len(monitor.observe(state, again).lessons) == 0


def test_a_completed_task_searches_four_kilobytes_of_memories(make_action):
    event = make_action(action_type="finish", terminated=True, params={"task": "ship v2"})
    _, (typed,) = run([event])
    (request,) = [r for r in typed.requests if r.kind is ReflectionRequestKind.TASK_COMPLETION]
    assert (request.memory_query, request.memory_budget_bytes) == ("ship v2", 4096)
    assert typed.raw.lessons[0]["payload"]["tags"][0] == "task_outcome"
    quiet = DetectionSettings(profile="seed", learn_from_failures=False, task_completion_budget=0)
    _, (none,) = run([make_action(action_type="finish", terminated=True)], quiet)
    assert none.raw.lessons == [] and none.requests == []


def test_events_of_one_loop_from_two_partitions_are_all_applied(make_action):
    """Issue 15.2: offsets of different partitions are not comparable."""
    monitor = LoopMonitor(DetectionSettings(profile="seed"))
    state = LoopState("loop-1")
    events = [make_action(action_type="a") for _ in range(3)]
    assert monitor.observe(state, events[0], Origin(1, 40)) is not None
    assert monitor.observe(state, events[1], Origin(0, 3)) is not None  # a lower offset elsewhere
    findings = monitor.observe(state, events[2], Origin(1, 41))
    assert findings.warnings[0]["consecutive_count"] == 3
    assert monitor.observe(state, events[1], Origin(0, 3)) is None  # and replays still skip
    restored = LoopState.restore(state.loop_id, state.snapshot())
    assert restored.already_applied(Origin(0, 3)) and not restored.already_applied(Origin(0, 4))


def test_version_1_snapshots_still_restore(make_action):
    state, _ = run([make_action(action_type="a")])
    raw = codec.loads_state(state.snapshot())
    raw["v"], raw["off"], raw["p"] = 1, [7, 0], 2
    restored = LoopState.restore("loop-1", codec.dumps(raw))
    assert restored.already_applied(Origin(2, 7)) and not restored.already_applied(Origin(1, 0))


def test_cached_reflections_keep_bounded_params(make_action):
    """Issue 15.6: the reflection cache is capped like the window."""
    events = [
        make_action(action_type="a", success=False, params={"blob": "x" * 100_000})
        for _ in range(5)
    ]
    state, _ = run(events)
    assert len(codec.dumps(codec.loads_state(state.snapshot()))) < 20_000
    assert all("_omitted" in r["action_params"] for r in state.reflections)


KEEP_SNAPSHOTS = """
import sys
from loopwarden.agents.monitor.state import LoopState

def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096

state = LoopState("loop", window=[{"event_id": "e", "params": {"q": "x" * 600}}])
before = rss()
kept = [state.snapshot() for _ in range(20_000)]
print((rss() - before) / len(kept))
"""


def test_a_snapshot_kept_in_the_table_costs_its_length_not_4_kib():
    """orjson's output buffer is at least 4 KiB: a million kept snapshots held 4.1 GB.
    Measured in a fresh interpreter, so freed memory of other tests cannot hide it."""
    import subprocess
    import sys

    run_ = subprocess.run(
        [sys.executable, "-c", KEEP_SNAPSHOTS], capture_output=True, text=True, check=True
    )
    per_snapshot = float(run_.stdout)
    size = len(LoopState("loop", window=[{"event_id": "e", "params": {"q": "x" * 600}}]).snapshot())
    assert per_snapshot < 2 * size < 4096, (per_snapshot, size)


def test_a_state_is_compressed_and_an_uncompressed_one_still_restores(make_action):
    state, _ = run([make_action(action_type="a", params={"q": "x"}) for _ in range(3)])
    snapshot = state.snapshot()
    plain = codec.dumps(codec.loads_state(snapshot))  # as earlier versions wrote it
    assert len(snapshot) < len(plain) / 2
    assert LoopState.restore("loop-1", plain).snapshot() == snapshot
