"""A refusal — the call turned away before it had any effect — is told apart the same
way by every integration, from the frameworks' own exception classes."""

import httpx
import pytest
from deferred import deferred
from pydantic import BaseModel, ValidationError

from loopwarden.agents.otlp.spans import action_of, decode_spans
from loopwarden.schemas.refusals import refused, refused_type
from loopwarden.schemas.tool_calls import tool_call_fields

from ..integration.otlp_payloads import otlp_json, tool_span  # noqa: TID252

sdk_exceptions = deferred("agents.exceptions")
pai = deferred("pydantic_ai")


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
    ("make_error", "expected"),
    [
        pytest.param(validation_error, True, id="pydantic-validation"),
        pytest.param(lambda: pai.ModelRetry("pick a date in the future"), True, id="model-retry"),
        pytest.param(
            lambda: sdk_exceptions.ModelBehaviorError("invalid JSON for tool book"),
            True,
            id="model-behavior",
        ),
        pytest.param(lambda: http_error(404), True, id="http-404"),
        pytest.param(lambda: http_error(422), True, id="http-422"),
        pytest.param(lambda: http_error(429), False, id="http-429"),  # rate limited: retry it
        pytest.param(lambda: http_error(503), False, id="http-503"),
        pytest.param(lambda: RuntimeError("disk full"), False, id="runtime"),
        pytest.param(lambda: "exit code 1", False, id="text"),
        pytest.param(lambda: None, False, id="none"),
    ],
)
def test_refusals_of_the_frameworks(make_error, expected):
    """Each case's error is made in the test: the frameworks are imported by the
    process that runs it, not by every one that collects it (tests/support/deferred.py)."""
    assert refused(make_error()) is expected


def test_a_refused_call_is_published_rejected_and_failed():
    fields = tool_call_fields({"amount": 3}, error=pai.ModelRetry("amount must be positive"))
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
