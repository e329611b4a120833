"""The analyst's question to a model: the seed's verdict as a pydantic model.

Asked through the worker's one OpenAI-compatible client
(:class:`~loopwarden.agents.llm.StructuredChat`), which makes the strict JSON
schema from :class:`ModelVerdict` and validates the answer against it.
"""

from __future__ import annotations

from opentelemetry.trace import Tracer
from pydantic import BaseModel, ConfigDict, Field

from loopwarden.agents.llm import ModelEndpoint, StructuredChat

SYSTEM_PROMPT = (
    "You analyse an AI agent's recent actions. Answer only with a JSON object with the keys "
    "is_spinning (boolean), reason (string), suggestions (array of strings) and next_actions "
    "(array of strings)."
)


class ModelVerdict(BaseModel):
    """The seed's output schema (seed 000 section 2.2.1), its descriptions as written there."""

    model_config = ConfigDict(extra="ignore")

    is_spinning: bool = Field(description="是否发生了 SPIN 情况")
    reason: str = Field(description="如果发生了 SPIN，说明原因")
    suggestions: list[str] = Field(description="提供打破循环的建议")
    next_actions: list[str] = Field(description="具体的下一步操作建议")


class VerdictClient:
    """Asks the configured model whether a loop spins."""

    def __init__(self, endpoint: ModelEndpoint, tracer: Tracer | None = None) -> None:
        self.chat = StructuredChat(endpoint, tracer)

    async def verdict(self, prompt: str) -> ModelVerdict:
        """The model's verdict; :class:`~loopwarden.errors.ModelEndpointError` on a
        timeout, an error status or an answer that is not a verdict."""
        return await self.chat.ask(SYSTEM_PROMPT, prompt, ModelVerdict, "verdict")

    async def close(self) -> None:
        """Close the HTTP connections."""
        await self.chat.close()
