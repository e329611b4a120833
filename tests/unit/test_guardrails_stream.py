"""Guardrails on the stream, in memory: completions in, rerun decisions and guardrail
warnings out, through the worker's own processor, router and dead letters
(:class:`~loopwarden.streams.runtime.in_memory.InMemoryWorker`; the wiring on a broker
is tests/integration/test_capability_wiring.py's)."""

from __future__ import annotations

from loopwarden.schemas import codec
from loopwarden.schemas.warnings import LoopWarning, WarningKind
from loopwarden.settings import Settings
from loopwarden.streams.runtime.in_memory import InMemoryWorker
from loopwarden.worker import in_memory_worker


def guardrails() -> InMemoryWorker:
    settings = Settings().namespaced("guardrails", partitions=4)
    return in_memory_worker(settings.model_copy(update={"roles": frozenset({"guardrails"})}))


def decisions_of(worker: InMemoryWorker, family: str) -> list[dict]:
    return [d for d in worker.output("decisions") if d["loop_id"].startswith(family)]


def test_a_family_that_never_improves_is_finalized_by_fatigue() -> None:
    worker = guardrails()
    loop_id = family = "fam-fatigue"
    for _ in range(6):
        worker.complete_loop(loop_id, 0.5, 0.5, max_reruns=5)
        worker.run()
        decision = decisions_of(worker, family)[-1]
        result = decision["decision_result"]
        if result["decision"] == "finalize":
            break
        loop_id = result["new_loop_id"]
    (warning,) = [LoopWarning.model_validate(w) for w in worker.output("warnings")]
    assert decision["loop_id"] == warning.loop_id == f"{family}_r4"
    assert result["finalize_reason"] == "reflection_fatigue"
    assert result["rerun_count"] == 4 and result["max_reruns"] == 5  # before the limit
    assert decision["reflection_result"]["reflection_fatigue"] == 0.6
    assert warning.kind is WarningKind.REFLECTION_FATIGUE
    assert "[GUARDRAIL]" in warning.timeline_message


def test_a_bias_tag_repeated_across_three_loops_halts() -> None:
    worker = guardrails()
    family = "fam-bias"
    tags = [{"tag": "anchoring", "detail": "sticks to the first estimate"}]
    for loop_id in (family, f"{family}_r1", f"{family}_r2"):
        worker.complete_loop(loop_id, 0.6, 0.2, bias_tags=tags)
    worker.run()
    received = decisions_of(worker, family)
    assert [d["loop_id"] for d in received] == [family, f"{family}_r1", f"{family}_r2"]
    assert [d["decision_result"]["decision"] for d in received] == ["rerun", "rerun", "finalize"]
    last = received[-1]
    assert last["decision_result"]["action"] == "halt_loop"
    assert last["reflection_result"]["repetition_counts"] == {"anchoring": 3}


def test_a_completion_not_done_is_dead_lettered_and_the_next_one_decided() -> None:
    worker = guardrails()
    family = "fam-not-done"
    bad = codec.dumps(
        {
            "event_id": "nd",
            "type": "loop_complete",
            "loop_id": family,
            "occurred_at": 1.0,
            "payload": {"reflection_status": "running", "alignment_score": 0.5, "drift_score": 0.5},
        }
    )
    completions = worker.settings.topics.loop_completions
    worker.send(completions, bad, family.encode())
    worker.complete_loop(family, 0.9, 0.1)  # the worker keeps going
    worker.run()
    (letter,) = worker.dead_lettered()
    (decision,) = decisions_of(worker, family)
    assert letter.reason == "validation"
    assert letter.message == "loop_complete.payload.reflection_status: Input should be 'done'"
    assert letter.source.topic == completions
    assert letter.value == bad
    assert decision["decision_result"]["finalize_reason"] == "thresholds_met"


def test_an_override_lifts_a_familys_rerun_limit() -> None:
    worker = guardrails()
    last: dict[str, dict] = {}
    for family, overridden in (("fam-limited", False), ("fam-overridden", True)):
        worker.complete_loop(family, 0.5, 0.5, max_reruns=1)
        worker.run()
        (first,) = decisions_of(worker, family)
        assert first["decision_result"]["decision"] == "rerun"
        if overridden:
            worker.override_guardrails(family, "ops@example.com", override_max_reruns=True)
        worker.complete_loop(first["decision_result"]["new_loop_id"], 0.5, 0.5, max_reruns=1)
        worker.run()
        last[family] = decisions_of(worker, family)[-1]["decision_result"]
    assert last["fam-limited"]["decision"] == "finalize"
    assert last["fam-limited"]["finalize_reason"] == "rerun_limit_reached"
    assert last["fam-overridden"]["decision"] == "rerun"
