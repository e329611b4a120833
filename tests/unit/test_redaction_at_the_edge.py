"""Issue 15.1: a secret in any field an event can carry reaches no output in clear.

Each processor is run as the worker runs it (raw record in, outputs and the
state snapshot out); every secret of :mod:`secrets_corpus` is put in every
free-text field, and the outputs are searched for it.
"""

from __future__ import annotations

import pytest
from one_record import process_one
from secrets_corpus import SECRET_PARAMS, SECRETS, all_secrets

from loopwarden.agents.analyst.analyst import ReflectionAnalyst
from loopwarden.agents.guardrails.declaration import FAMILY_STATES as GUARDRAIL_FAMILIES
from loopwarden.agents.guardrails.records import GuardrailProcessor
from loopwarden.agents.monitor.declaration import LOOP_STATES
from loopwarden.agents.monitor.records import RecordProcessor
from loopwarden.schemas import codec
from loopwarden.schemas.dead_letter import SourcePosition
from loopwarden.schemas.memory import validate_memory_write
from loopwarden.schemas.reflection import validate_reflection_request

SOURCE = SourcePosition("actions", 0, 0)
TEXTS = [text for _, text, _ in SECRETS]


def leaks(blob: bytes | str) -> list[str]:
    if isinstance(blob, bytes) and blob[:1] not in (b"{", b"["):
        blob = codec.dumps(codec.loads_state(blob))  # a compressed table state
    text = blob.decode() if isinstance(blob, bytes) else blob
    text = text.replace("\\n", "\n").replace('\\"', '"')
    return [secret for secret in all_secrets() if secret in text]


def failed_action(i: int, text: str) -> bytes:
    return codec.dumps(
        {
            "event_id": f"e{i}",
            "loop_id": "loop-secret",
            "occurred_at": 1_767_225_600 + i,
            "payload": {
                "action_type": "db_login",
                "action_name": text,
                "params": {"note": text, "nested": [{"cmd": text}], **SECRET_PARAMS},
                "success": False,
                "error_message": text,
                "terminated": i == len(TEXTS) - 1,
                "resource_usage": {"log": text},
                "side_effects": [text],
                "edit": {"start_line": 1, "end_line": 2, "content": text},
            },
        }
    )


def test_monitor_outputs_and_state_hold_no_secret():
    processor = RecordProcessor()
    states = {}
    outputs = []
    for i, text in enumerate(TEXTS):
        outcome = process_one(
            processor, LOOP_STATES, failed_action(i, text), b"loop-secret", SOURCE, states.get
        )
        states.update(outcome.states)
        outputs += outcome.warnings + outcome.requests + outcome.lessons
        assert not outcome.dead_letters, outcome.dead_letters
    assert any(o.get("kind") == "action_reflection" for o in outputs)
    assert any(o.get("type") == "memory_write" for o in outputs)
    assert leaks(codec.dumps(outputs)) == []
    assert leaks(states["loop-secret"].snapshot()) == []


async def test_analyst_prompt_and_analysis_hold_no_secret():
    processor = RecordProcessor()
    states = {}
    requests = []
    for i, text in enumerate(TEXTS):
        outcome = process_one(
            processor, LOOP_STATES, failed_action(i, text), None, SOURCE, states.get
        )
        states.update(outcome.states)
        requests += outcome.requests
    analyst = ReflectionAnalyst()
    for request in requests:
        # a foreign producer's request is redacted on the way in, too
        raw = dict(request, prompt=TEXTS[0], memory_query=TEXTS[1])
        checked = validate_reflection_request(raw)
        prompt = analyst._prompt(checked, checked["kind"] == "semantic_spin_check", TEXTS[2])
        assert leaks(prompt.replace(TEXTS[2], "")) == []
        analysis = await analyst.analyze(checked)
        assert leaks(codec.dumps(analysis)) == []


def test_guardrail_decisions_state_and_replies_hold_no_secret():
    processor = GuardrailProcessor()
    states = {}
    blobs = []
    for i, text in enumerate(TEXTS):
        record = codec.dumps(
            {
                "event_id": f"c{i}",
                "type": "loop_complete",
                "loop_id": "fam" if i == 0 else f"fam_r{i}",
                "occurred_at": 1_767_225_600 + i,
                "payload": {
                    "reflection_status": "done",
                    "alignment_score": 0.1,
                    "drift_score": 0.9,
                    "bias_tags": [{"tag": "anchoring", "detail": text}],
                    "orchestrator_persona": text,
                    "reflection_persona": text,
                    "override_by": text,
                    "max_reruns": 100,
                },
            }
        )
        outcome = process_one(processor, GUARDRAIL_FAMILIES, record, b"fam", SOURCE, states.get)
        assert not outcome.dead_letters, outcome.dead_letters
        states.update(outcome.states)
        blobs.append(codec.dumps([outcome.decisions, outcome.warnings, outcome.replies]))
    cached = codec.dumps(
        {
            "event_id": "r1",
            "type": "reflection_cached",
            "loop_id": "fam",
            "occurred_at": 1_767_230_000,
            "payload": {"reason": TEXTS[0], "suggestions": TEXTS, **SECRET_PARAMS},
        }
    )
    outcome = process_one(processor, GUARDRAIL_FAMILIES, cached, b"fam", SOURCE, states.get)
    states.update(outcome.states)
    status = processor.status(states["fam"], "fam")
    assert leaks(b"".join(blobs)) == []
    assert leaks(states["fam"].snapshot()) == []
    assert leaks(codec.dumps(status)) == []


@pytest.mark.parametrize(("name", "text", "secret"), SECRETS)
def test_memory_writes_are_redacted_in_every_field(name, text, secret):
    write = validate_memory_write(
        {
            "event_id": "m1",
            "occurred_at": 1_767_225_600,
            "payload": {
                "content": f"remember: {text}",
                "tags": [text],
                "potential_questions": [text],
                "entity_refs": [text],
            },
        }
    )
    assert secret not in write.model_dump_json(), name
