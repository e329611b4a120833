"""The optional LLM conflict judge (seed 002 §5) over an OpenAI-compatible endpoint.

Asked only for neighbours with similarity ≥ 0.4 when ``analyst.base_url`` is set,
through the worker's one client (:class:`~loopwarden.agents.llm.StructuredChat`,
blocking: the memory writer runs in a thread); the answer is held to the schema
of :class:`Judgement`, and any timeout, error or invalid answer falls back to
the heuristic.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field

from loopwarden.agents.llm import ModelEndpoint, StructuredChat
from loopwarden.errors import ModelEndpointError
from loopwarden.settings import AnalystSettings

JUDGE_PROMPT = (
    "You judge whether memory B contradicts memory A, supersedes it (a newer, corrected "
    "version), or neither. Answer only with JSON: label, confidence (0-1), reason."
)


Question = tuple[str, str]
"""What the judge is asked: (the stored memory, the new one)."""


class Judgement(BaseModel):
    """The judge's validated answer."""

    label: Literal["contradicts", "supersedes", "none"]
    confidence: float = Field(ge=0, le=1)
    reason: str


@dataclass
class ConflictJudge:
    """Asks the configured model; ``None`` means 'use the heuristic'."""

    settings: AnalystSettings
    last_error: str | None = None
    _chat: StructuredChat | None = field(default=None, init=False, repr=False)

    @property
    def enabled(self) -> bool:
        """A model endpoint is configured."""
        return bool(self.settings.base_url)

    def answer(self, question: Question) -> Judgement | str:
        """The model's judgement of ``question``, or why there is none."""
        judged = self.judge(*question)
        return judged if judged is not None else str(self.last_error)

    def answer_all(self, questions: list[Question]) -> dict[Question, Judgement | str]:
        """:meth:`answer` for each question, in order (a blocking call each)."""
        return {question: self.answer(question) for question in questions}

    def judge(self, existing: str, candidate: str) -> Judgement | None:
        """The model's judgement, or None on any failure (recorded in ``last_error``)."""
        if self._chat is None:
            endpoint = ModelEndpoint.from_settings(self.settings)
            if endpoint is None:
                return None
            self._chat = StructuredChat(endpoint)
        question = f"Memory A: {existing}\nMemory B: {candidate}\nDecide the relationship."
        try:
            return self._chat.ask_blocking(
                JUDGE_PROMPT, question, Judgement, "memory_conflict_judgement"
            )
        except ModelEndpointError as exc:
            self.last_error = str(exc)
            return None
