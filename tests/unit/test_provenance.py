"""Every output says what produced it: component, logic version, settings fingerprint."""

from one_record import process_one

from loopwarden.agents.guardrails.declaration import FAMILY_STATES as GUARDRAIL_FAMILIES
from loopwarden.agents.guardrails.records import GuardrailProcessor
from loopwarden.agents.monitor.declaration import LOOP_STATES
from loopwarden.agents.monitor.records import RecordProcessor
from loopwarden.schemas import codec
from loopwarden.schemas.dead_letter import SourcePosition
from loopwarden.schemas.provenance import differing_settings
from loopwarden.schemas.warnings import LoopWarning
from loopwarden.settings import DetectionSettings, Settings


def _spin(processor: RecordProcessor) -> dict:
    states: dict = {}
    warnings = []
    for offset in range(3):
        event = {"event_id": f"e{offset}", "loop_id": "L", "occurred_at": float(offset)}
        event["payload"] = {"action_type": "search"}
        out = process_one(
            processor,
            LOOP_STATES,
            codec.dumps(event),
            None,
            SourcePosition("t", 0, offset),
            states.get,
        )
        states.update(out.states)
        warnings += out.warnings
    (warning,) = warnings
    return warning


def test_a_warning_carries_the_settings_that_decided_it():
    settings = Settings(detection=DetectionSettings(profile="seed"))
    warning = LoopWarning.model_validate(_spin(RecordProcessor.for_settings(settings)))
    stamp = warning.produced_by
    assert stamp is not None and stamp.component == "monitor"
    assert stamp.settings["detection.spin_threshold"] == 3
    assert stamp.settings["limits.idle_loop_ttl_s"] == settings.limits.idle_loop_ttl_s
    assert len(stamp.fingerprint) == 12


def test_the_fingerprint_changes_with_a_deciding_setting_only():
    base = RecordProcessor.for_settings(Settings()).stamp
    same = RecordProcessor.for_settings(Settings()).stamp
    other = RecordProcessor(DetectionSettings(spin_threshold=4), idle_ttl_s=3600).stamp
    assert base["fingerprint"] == same["fingerprint"]
    assert base["fingerprint"] != other["fingerprint"]
    assert differing_settings(base["settings"], other["settings"]) == {
        "detection.spin_threshold": (3, 4)
    }


def test_set_valued_settings_do_not_change_the_fingerprint_by_their_order():
    one = DetectionSettings(simple_action_types=frozenset({"a", "b", "c"}))
    two = DetectionSettings(simple_action_types=frozenset({"c", "b", "a"}))
    assert RecordProcessor(one).stamp["fingerprint"] == RecordProcessor(two).stamp["fingerprint"]


def test_guardrail_decisions_are_stamped_too():
    processor = GuardrailProcessor.for_settings(Settings())
    completion = {
        "event_id": "c1",
        "loop_id": "fam",
        "occurred_at": 1.0,
        "type": "loop_complete",
        "payload": {"reflection_status": "done", "alignment_score": 0.2, "drift_score": 0.1},
    }
    out = process_one(
        processor, GUARDRAIL_FAMILIES, codec.dumps(completion), None, SourcePosition("c", 0, 0)
    )
    (decision,) = out.decisions
    assert decision["produced_by"]["component"] == "guardrails"
    assert decision["produced_by"]["settings"]["guardrails.max_reruns"] == 3
