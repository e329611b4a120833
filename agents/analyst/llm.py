"""An OpenAI-compatible chat-completions client for the analyst's structured answers."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
from opentelemetry.trace import Tracer
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from loopwarden.errors import LoopwardenError, ModelEndpointError
from loopwarden.schemas import codec
from loopwarden.streams.runtime.telemetry.spans import chat_span

RETRIABLE_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
"""HTTP statuses after which the same request may succeed."""


class ModelVerdict(BaseModel):
    """The seed's output schema (seed 000 section 2.2.1)."""

    model_config = ConfigDict(extra="ignore")

    is_spinning: bool
    reason: str
    suggestions: list[str] = Field(default_factory=list)
    next_actions: list[str] = Field(default_factory=list)


VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["is_spinning", "reason", "suggestions", "next_actions"],
    "properties": {
        "is_spinning": {"type": "boolean", "description": "是否发生了 SPIN 情况"},
        "reason": {"type": "string", "description": "如果发生了 SPIN，说明原因"},
        "suggestions": {
            "type": "array",
            "items": {"type": "string"},
            "description": "提供打破循环的建议",
        },
        "next_actions": {
            "type": "array",
            "items": {"type": "string"},
            "description": "具体的下一步操作建议",
        },
    },
}

SYSTEM_PROMPT = (
    "You analyse an AI agent's recent actions. Answer only with a JSON object with the keys "
    "is_spinning (boolean), reason (string), suggestions (array of strings) and next_actions "
    "(array of strings)."
)


class ChatCompletionsClient:
    """POST {base_url}/chat/completions with a JSON-schema response format."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout_s: float = 10.0,
        tracer: Tracer | None = None,
    ) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.tracer = tracer
        self.model = model
        self.api_key = api_key
        self.timeout_s = timeout_s
        self._session: aiohttp.ClientSession | None = None

    async def close(self) -> None:
        """Close the HTTP session."""
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def verdict(self, prompt: str) -> ModelVerdict:
        """Ask the model; raise :class:`~loopwarden.errors.ModelEndpointError` on a timeout,
        an error status or an invalid output."""
        body = {
            "model": self.model,
            "temperature": 0,
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": prompt},
            ],
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "spin_detection", "strict": True, "schema": VERDICT_SCHEMA},
            },
        }
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        if self._session is None:
            self._session = aiohttp.ClientSession()
        with chat_span(self.tracer, self.model, self.url, headers) as span:
            try:
                async with asyncio.timeout(self.timeout_s):
                    async with self._session.post(
                        self.url, data=codec.dumps(body), headers=headers
                    ) as response:
                        raw = await response.read()
                        if span is not None:
                            span.set_attribute("http.response.status_code", response.status)
                        if response.status != 200:
                            raise ModelEndpointError(
                                f"model endpoint answered HTTP {response.status}",
                                retriable=response.status in RETRIABLE_STATUSES,
                            )
            except TimeoutError as exc:
                raise ModelEndpointError(
                    f"model endpoint timed out after {self.timeout_s:.1f}s", retriable=True
                ) from exc
            except aiohttp.ClientError as exc:
                raise ModelEndpointError(
                    f"model endpoint unreachable: {exc}", retriable=True
                ) from exc
            return parse_verdict(raw)


def parse_verdict(raw: bytes) -> ModelVerdict:
    """The verdict inside a chat-completions response, validated."""
    try:
        reply = codec.loads(raw)
        content = reply["choices"][0]["message"]["content"]
        return ModelVerdict.model_validate(codec.loads(content))
    except (LoopwardenError, KeyError, IndexError, TypeError, ValidationError) as exc:
        raise ModelEndpointError(
            f"model answer is not a valid verdict: {exc}", retriable=False
        ) from exc
