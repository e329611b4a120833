"""Text longer than a field's limit is cut at the edge, never refused: the first part
kept (a result's start and end), the digest of the whole result, and the cut fields
named (issue 47, item 1; the end since issue 59)."""

from __future__ import annotations

import orjson
import pytest
from click.testing import CliRunner
from one_record import process_one

from loopwarden.agents.monitor.declaration import LOOP_STATES
from loopwarden.agents.monitor.records import RecordProcessor
from loopwarden.cli import main
from loopwarden.schemas import codec
from loopwarden.schemas.dead_letter import SourcePosition
from loopwarden.schemas.events import (
    RESULT_MAX_CHARS,
    TEXT_LIMITS,
    result_digest,
    validate_action,
)
from loopwarden.schemas.text_limits import RESULT_TAIL_CHARS, cut_marker
from loopwarden.streams.client.event_builder import make_action_event

LOG = "".join(f"test_{n} PASSED in 0.{n % 10}s\n" for n in range(400))  # ≈ 10 KB of output


def raw(**payload) -> dict:
    return {
        "event_id": "e1",
        "loop_id": "L",
        "occurred_at": 1_700_000_000.0,
        "payload": {"action_type": "pytest", **payload},
    }


def test_a_long_result_keeps_its_start_and_its_end_with_the_digest_of_the_whole():
    """The end of a test run or a traceback says why it failed: it was cut away."""
    ending = "E   CardDeclined: insufficient_funds\nFAILED tests/test_billing.py::test_charge\n"
    event = validate_action(raw(result=LOG + ending))
    payload = event.payload
    assert len(payload.result) <= RESULT_MAX_CHARS
    assert payload.result.startswith(LOG[:1000])
    assert payload.result.endswith(ending)
    assert f"[{len(LOG + ending) - RESULT_MAX_CHARS} characters cut]" in payload.result
    assert payload.result_digest == result_digest(LOG + ending)
    assert payload.truncated == ["result"]


def test_the_client_and_the_wire_agree():
    client = make_action_event("L", "pytest", event_id="e1", occurred_at=1.0, result=LOG)
    wire = validate_action(raw(result=LOG))
    assert client.payload == wire.payload


def test_a_digest_sent_with_the_result_is_kept():
    assert validate_action(raw(result=LOG, result_digest="abc")).payload.result_digest == "abc"


@pytest.mark.parametrize("field", sorted(set(TEXT_LIMITS) - {"action_type", "result"}))
def test_every_text_field_with_a_limit_is_cut_not_refused(field):
    long = "x" * (TEXT_LIMITS[field] + 10)
    payload = validate_action(raw(**{field: long})).payload
    assert getattr(payload, field) == long[: TEXT_LIMITS[field]]
    assert payload.truncated == [field]


def test_a_short_event_is_not_marked():
    assert validate_action(raw(result="ok")).payload.truncated is None


def test_the_worker_applies_a_long_result_instead_of_dead_lettering_it():
    processor = RecordProcessor()
    out = process_one(
        processor, LOOP_STATES, codec.dumps(raw(result=LOG)), b"L", SourcePosition("a", 0, 0)
    )
    assert out.dead_letters == [] and out.events == 1


def test_detect_accepts_a_long_result(tmp_path):
    path = tmp_path / "run.jsonl"
    line = {"loop_id": "L", "action_type": "pytest", "result": LOG}
    path.write_text(orjson.dumps(line).decode() + "\n")
    result = CliRunner().invoke(main, ["detect", str(path)])
    assert result.exit_code == 0, result.stderr
    assert "0 bad line(s)" in result.stderr


def test_a_secret_across_the_cut_is_redacted_not_left_half_in_clear():
    """A key cut in half no longer looks like a key to the redactor: the text is
    redacted around the cut before it is cut."""
    secret = "AKIAIOSFODNN7EXAMPLE"
    head = RESULT_MAX_CHARS - RESULT_TAIL_CHARS - len(cut_marker(1000))
    text = (
        "x" * (head - 8)
        + f" {secret} "
        + "y" * 1400
        + f" {secret} "
        + "z" * (RESULT_TAIL_CHARS - 12)
    )
    # the start's cut and the end's cut each fall inside a key
    assert text.index(secret) < head < text.index(secret) + len(secret)
    assert text.rindex(secret) < len(text) - RESULT_TAIL_CHARS < text.rindex(secret) + 20
    payload = validate_action(raw(result=text)).payload
    assert "AKIAIOSF" not in payload.result and "ODNN7EXAMPLE" not in payload.result
    assert payload.result_digest == result_digest(text)
