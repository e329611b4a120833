"""The optional LLM conflict judge (seed 002 §5) over an OpenAI-compatible endpoint.

Asked only for neighbours with similarity ≥ 0.4 when ``analyst.base_url`` is set;
its answer is held to a JSON schema, and any timeout, error or invalid answer
falls back to the heuristic. It runs inside the memory writer's thread, so it
uses a blocking HTTP call.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from loopwarden.settings import AnalystSettings

CONFLICT_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["label", "confidence", "reason"],
    "properties": {
        "label": {"type": "string", "enum": ["contradicts", "supersedes", "none"]},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "reason": {"type": "string"},
    },
}
JUDGE_PROMPT = (
    "You judge whether memory B contradicts memory A, supersedes it (a newer, corrected "
    "version), or neither. Answer only with JSON: label, confidence (0-1), reason."
)


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

    @property
    def enabled(self) -> bool:
        """A model endpoint is configured."""
        return bool(self.settings.base_url)

    def judge(self, existing: str, candidate: str) -> Judgement | None:
        """The model's judgement, or None on any failure (recorded in ``last_error``)."""
        if not self.settings.base_url:
            return None
        body = {
            "model": self.settings.model,
            "temperature": 0,
            "messages": [
                {"role": "system", "content": JUDGE_PROMPT},
                {
                    "role": "user",
                    "content": f"Memory A: {existing}\nMemory B: {candidate}"
                    "\nDecide the relationship.",
                },
            ],
            "response_format": {
                "type": "json_schema",
                "json_schema": {
                    "name": "memory_conflict_judgement",
                    "strict": True,
                    "schema": CONFLICT_SCHEMA,
                },
            },
        }
        request = urllib.request.Request(
            self.settings.base_url.rstrip("/") + "/chat/completions",
            data=json.dumps(body).encode(),
            method="POST",
            headers={
                "Content-Type": "application/json",
                **(
                    {"Authorization": f"Bearer {self.settings.api_key.get_secret_value()}"}
                    if self.settings.api_key
                    else {}
                ),
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=self.settings.timeout_s) as response:
                reply = json.loads(response.read())
            content = reply["choices"][0]["message"]["content"]
            return Judgement.model_validate(json.loads(content))
        except (
            OSError,
            urllib.error.URLError,
            ValueError,
            KeyError,
            IndexError,
            TypeError,
            ValidationError,
        ) as exc:
            self.last_error = f"{type(exc).__name__}: {exc}"
            return None
