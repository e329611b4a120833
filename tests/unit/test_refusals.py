"""A refusal — the call turned away before it had any effect — is told apart the same
way by every integration, from the frameworks' own exception classes."""

import httpx
import pytest
from agents.exceptions import ModelBehaviorError
from pydantic import BaseModel, ValidationError
from pydantic_ai import ModelRetry

from loopwarden.agents.otlp.spans import action_of, decode_spans
from loopwarden.schemas.refusals import refused, refused_type
from loopwarden.schemas.tool_calls import tool_call_fields

from ..integration.otlp_payloads import otlp_json, tool_span  # noqa: TID252


class Booking(BaseModel):
    amount: int


def validation_error() -> ValidationError:
    try:
        Booking(amount="lots")  # type: ignore[arg-type]
    except ValidationError as exc:
        return exc
    raise AssertionError("unreachable")


def http_error(status: int) -> httpx.HTTPStatusError:
    request = httpx.Request("POST", "https://api.example.com/bookings")
    response = httpx.Response(status, request=request)
    return httpx.HTTPStatusError(f"{status}", request=request, response=response)


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (validation_error(), True),
        (ModelRetry("pick a date in the future"), True),
        (ModelBehaviorError("invalid JSON for tool book"), True),
        (http_error(404), True),
        (http_error(422), True),
        (http_error(429), False),  # rate limited: worth retrying as it is
        (http_error(503), False),
        (RuntimeError("disk full"), False),
        ("exit code 1", False),
        (None, False),
    ],
)
def test_refusals_of_the_frameworks(error, expected):
    assert refused(error) is expected


def test_a_refused_call_is_published_rejected_and_failed():
    fields = tool_call_fields({"amount": 3}, error=ModelRetry("amount must be positive"))
    assert fields["rejected"] is True and fields["success"] is False
    assert "rejected" not in tool_call_fields({"amount": 3}, error=RuntimeError("boom"))
    assert tool_call_fields({}, error="linter: E999", rejected=True)["rejected"] is True


def test_an_otlp_span_whose_error_is_a_refusal_is_rejected():
    assert refused_type("pydantic_core._pydantic_core.ValidationError") and refused_type("400")
    spans = [
        tool_span("book", "c", error="bad amount", error_type="ValidationError"),
        tool_span("book", "c", error="HTTP 404", extra={"http.response.status_code": 404}),
        tool_span("book", "c", error="HTTP 429", extra={"http.response.status_code": 429}),
        tool_span("shell", "c", error="exit 1"),
    ]
    payloads = [action_of(s).payload for s in decode_spans(otlp_json(*spans), "otlp_json")]
    assert [p.rejected for p in payloads] == [True, True, None, None]
    assert all(p.success is False for p in payloads)
