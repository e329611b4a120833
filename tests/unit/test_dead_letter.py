"""Dead letters keep the original bytes and carry their reason in headers."""

from loopwarden.errors import EventValidationError, FieldError
from loopwarden.schemas.dead_letter import DeadLetter, SourcePosition


def test_headers_round_trip():
    error = EventValidationError("payload: bad", (FieldError("payload", "bad"),))
    letter = DeadLetter.from_error(error, b"\xff raw", SourcePosition("t", 2, 7, 99), b"k", 4)
    back = DeadLetter.from_record(letter.value, letter.key, letter.headers())
    assert back == letter
    summary = back.to_json_dict()
    assert summary["reason"] == "validation"
    assert summary["errors"] == [{"path": "payload", "message": "bad"}]
    assert summary["source"] == {"topic": "t", "partition": 2, "offset": 7, "timestamp_ms": 99}
