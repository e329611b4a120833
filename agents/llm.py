"""The one OpenAI-compatible client of the worker: structured answers as pydantic models.

The analyst's verdict (seed 000 §2.2.1) and the memory judge's label (seed 002 §5)
are asked through the official ``openai`` package's ``chat.completions.parse``:
the answer's JSON schema is made from the pydantic model (strict), the reply is
validated against it, and transport, timeouts and status codes are the
package's. Its own retries are off: a failure becomes one
:class:`~loopwarden.errors.ModelEndpointError` whose ``retriable`` says whether
the same request may succeed (a timeout, a refused connection, 408, 429, 5xx),
and the caller's policy decides. Each call is a GenAI ``chat {model}`` span whose
context travels in the request's headers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from opentelemetry.trace import Tracer
from pydantic import BaseModel, ValidationError

from loopwarden.errors import ModelEndpointError
from loopwarden.settings import AnalystSettings
from loopwarden.streams.runtime.telemetry.spans import chat_span

if TYPE_CHECKING:
    import openai
    from openai.types.chat import ChatCompletionMessageParam

Answer = TypeVar("Answer", bound=BaseModel)
RETRIABLE_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
"""HTTP statuses after which the same request may succeed."""
NO_KEY = "unused"
"""Sent when no key is configured (local servers ignore it; the package needs one)."""


@dataclass(frozen=True, slots=True)
class ModelEndpoint:
    """Where to ask: the chat-completions base URL, the model, the key, the timeout."""

    base_url: str
    model: str
    api_key: str | None = None
    timeout_s: float = 10.0

    @classmethod
    def from_settings(cls, settings: AnalystSettings) -> ModelEndpoint | None:
        """The endpoint ``analyst.base_url`` names (None: no model configured)."""
        if not settings.base_url:
            return None
        key = settings.api_key.get_secret_value() if settings.api_key else None
        return cls(settings.base_url, settings.model, key, settings.timeout_s)

    @property
    def url(self) -> str:
        """The chat-completions URL (for spans and messages)."""
        return self.base_url.rstrip("/") + "/chat/completions"


def _messages(system: str, user: str) -> list[ChatCompletionMessageParam]:
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def _openai() -> Any:
    """The ``openai`` package, imported on first use (half a second: a worker without a
    model endpoint never pays it)."""
    import openai

    return openai


def _failures() -> tuple[type[Exception], ...]:
    """What a call may raise: the package's errors, and an answer that is not the schema."""
    return (_openai().OpenAIError, ValidationError, ValueError)


def _failure(exc: Exception, endpoint: ModelEndpoint, name: str) -> ModelEndpointError:
    """What went wrong, as the one error with its retry policy."""
    openai = _openai()
    if isinstance(exc, openai.APITimeoutError):
        return ModelEndpointError(
            f"model endpoint timed out after {endpoint.timeout_s:.1f}s", retriable=True
        )
    if isinstance(exc, openai.APIConnectionError):
        return ModelEndpointError(f"model endpoint unreachable: {exc}", retriable=True)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        return ModelEndpointError(
            f"model endpoint answered HTTP {status}", retriable=status in RETRIABLE_STATUSES
        )
    return ModelEndpointError(f"model answer is not a valid {name}: {exc}", retriable=False)


class StructuredChat:
    """Asks one endpoint for answers shaped as a pydantic model (async and blocking)."""

    def __init__(self, endpoint: ModelEndpoint, tracer: Tracer | None = None) -> None:
        self.endpoint = endpoint
        self.tracer = tracer
        self._async: openai.AsyncOpenAI | None = None
        self._blocking: openai.OpenAI | None = None

    def _options(self) -> dict[str, object]:
        e = self.endpoint
        return {
            "base_url": e.base_url,
            "api_key": e.api_key or NO_KEY,
            "timeout": e.timeout_s,
            "max_retries": 0,  # the caller's error policy retries, bounded
        }

    def _request(
        self, system: str, user: str, answer: type[Answer], headers: dict[str, str]
    ) -> dict[str, Any]:
        return {
            "model": self.endpoint.model,
            "messages": _messages(system, user),
            "response_format": answer,
            "temperature": 0,
            "extra_headers": headers,
        }

    async def ask(self, system: str, user: str, answer: type[Answer], name: str) -> Answer:
        """The model's answer to ``user`` as ``answer``; ``name`` names the schema."""
        if self._async is None:
            self._async = _openai().AsyncOpenAI(**self._options())
        headers: dict[str, str] = {}
        with chat_span(self.tracer, self.endpoint.model, self.endpoint.url, headers) as span:
            try:
                request = self._request(system, user, answer, headers)
                reply = await self._async.chat.completions.parse(**request)
            except _failures() as exc:
                raise self._failed(exc, span, name) from exc
            _status(span, 200)
        return _parsed(reply, answer, name)

    def ask_blocking(self, system: str, user: str, answer: type[Answer], name: str) -> Answer:
        """:meth:`ask` for a caller in a worker thread."""
        if self._blocking is None:
            self._blocking = _openai().OpenAI(**self._options())
        headers: dict[str, str] = {}
        with chat_span(self.tracer, self.endpoint.model, self.endpoint.url, headers) as span:
            try:
                request = self._request(system, user, answer, headers)
                reply = self._blocking.chat.completions.parse(**request)
            except _failures() as exc:
                raise self._failed(exc, span, name) from exc
            _status(span, 200)
        return _parsed(reply, answer, name)

    def _failed(self, exc: Exception, span: Any, name: str) -> ModelEndpointError:
        if isinstance(exc, _openai().APIStatusError):
            _status(span, exc.status_code)
        return _failure(exc, self.endpoint, name)

    async def close(self) -> None:
        """Close the HTTP connections."""
        if self._async is not None:
            await self._async.close()
            self._async = None
        if self._blocking is not None:
            self._blocking.close()
            self._blocking = None


def _status(span: Any, status: int) -> None:
    if span is not None:
        span.set_attribute("http.response.status_code", status)


def _parsed(reply: object, answer: type[Answer], name: str) -> Answer:
    """The validated answer of ``reply``; a refusal or an empty answer is not one."""
    try:
        message = reply.choices[0].message  # type: ignore[attr-defined]
    except (AttributeError, IndexError, TypeError) as exc:
        raise ModelEndpointError(
            f"model answer is not a valid {name}: {exc}", retriable=False
        ) from exc
    parsed = message.parsed
    if not isinstance(parsed, answer):
        why = f"refused: {message.refusal}" if message.refusal else "no content"
        raise ModelEndpointError(f"model answer is not a valid {name}: {why}", retriable=False)
    return parsed
