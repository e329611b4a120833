"""The reflection analyst (seed 000 section 1.3 stages 3-5, section 2.2).

A reflection request in, an analysis out: the model's structured verdict when an
OpenAI-compatible endpoint is configured and answers validly in time, otherwise
the deterministic heuristics, saying why (``fallback_reason``). Memory context
comes from a :class:`MemoryContext` provider (none yet: the memory component
fills this seam with 2/5/10 KB by level).
"""

from __future__ import annotations

from typing import Any, Protocol

from opentelemetry.trace import Tracer

from loopwarden.agents.analyst.heuristics import Verdict, reflect, semantic_spin
from loopwarden.agents.analyst.llm import VerdictClient
from loopwarden.agents.llm import ModelEndpoint
from loopwarden.agents.spin import texts
from loopwarden.errors import ModelEndpointError
from loopwarden.schemas import codec
from loopwarden.schemas.ids import derived_id
from loopwarden.schemas.outputs import HEADER, ReflectionRecord
from loopwarden.settings import AnalystSettings


class MemoryContext(Protocol):
    """Finds memories for a reflection, at most ``budget_bytes`` of text."""

    async def context(self, loop_id: str, query: str, budget_bytes: int) -> str:
        """Relevant memories as text (empty when there are none)."""
        ...


class NoMemory:
    """The memory seam before memories exist: no context."""

    async def context(self, loop_id: str, query: str, budget_bytes: int) -> str:
        """Always empty."""
        return ""


class ReflectionAnalyst:
    """Analyses reflection requests with a model when configured, heuristics otherwise."""

    def __init__(
        self,
        settings: AnalystSettings | None = None,
        memory: MemoryContext | None = None,
        language: str = "en",
        tracer: Tracer | None = None,
    ) -> None:
        self.settings = settings or AnalystSettings()
        self.memory = memory or NoMemory()
        self.language = language
        endpoint = ModelEndpoint.from_settings(self.settings)
        self.client = VerdictClient(endpoint, tracer) if endpoint is not None else None

    async def close(self) -> None:
        """Release the HTTP session."""
        if self.client is not None:
            await self.client.close()

    async def analyze(self, request: dict[str, Any]) -> ReflectionRecord:
        """The analysis of one reflection request (a dict shaped as ReflectionRequest)."""
        semantic = request["kind"] == "semantic_spin_check"
        memory = ""
        if request.get("memory_budget_bytes") and request.get("memory_query"):
            memory = await self.memory.context(
                request["loop_id"], request["memory_query"], request["memory_budget_bytes"]
            )
        heuristic = self._heuristic(request, semantic)
        verdict, source, fallback = heuristic, "heuristic", None
        if self.client is not None and request["kind"] != "task_completion":
            try:
                model = await self.client.verdict(self._prompt(request, semantic, memory))
                verdict = Verdict(
                    model.is_spinning, model.reason, model.suggestions, model.next_actions
                )
                source = "model"
            except ModelEndpointError as exc:
                fallback = str(exc)
        record: ReflectionRecord = {
            **HEADER,
            "type": "reflection",
            "reflection_id": derived_id("reflection", request["loop_id"], request["request_id"]),
            "request_id": request["request_id"],
            "kind": request["kind"],
            "loop_id": request["loop_id"],
            "level": request["level"],
            "trigger_event_id": request["trigger_event_id"],
            "is_spinning": verdict.is_spinning,
            "reason": verdict.reason,
            "suggestions": verdict.suggestions,
            "next_actions": verdict.next_actions,
            "analysis": source,
            "fallback_reason": fallback,
            "memory_context": memory,
            "memory_budget_bytes": request.get("memory_budget_bytes", 0),
            "timeline_message": self._timeline(request, semantic, verdict),
            "occurred_at": request["occurred_at"],
        }
        return record

    def _heuristic(self, request: dict[str, Any], semantic: bool) -> Verdict:
        if request["kind"] == "task_completion":
            return Verdict(False, "task completed")
        if semantic:
            return semantic_spin(
                request["recent_actions"],
                similarity=self.settings.param_similarity_threshold,
                language=self.language,
            )
        return reflect(request["reflection"], self.language)

    def _prompt(self, request: dict[str, Any], semantic: bool, memory: str) -> str:
        if semantic and request.get("prompt"):
            prompt = str(request["prompt"])
        else:
            prompt = (
                "Analyse this action of an AI agent (reflection level "
                f"{request['level']}) and say whether the agent is spinning, why, how to break "
                "the loop and what to do next.\n\n## Action\n"
                + codec.dumps(request.get("reflection")).decode()
                + "\n\n## Recent actions\n"
                + codec.dumps(request.get("recent_actions", [])).decode()
            )
        if memory:
            prompt += "\n\n## Relevant memories\n" + memory
        return prompt

    def _timeline(self, request: dict[str, Any], semantic: bool, verdict: Verdict) -> str:
        actions = request.get("recent_actions") or []
        action_type = (request.get("reflection") or {}).get("action_type") or (
            actions[-1]["action_type"] if actions else "unknown"
        )
        if request["kind"] == "task_completion":
            return f"✓ [REFLECTION] Task completed by '{action_type}'\n"
        if semantic:
            if verdict.is_spinning:
                return texts.spin_timeline(
                    self.language, action_type, verdict.reason, verdict.suggestions
                ) + _next_actions(self.language, verdict.next_actions)
            return f"✓ [REFLECTION] No logic spin: {verdict.reason}\n"
        reflection = request["reflection"]
        if reflection.get("success", True):
            text = f"✓ [REFLECTION] Action '{action_type}' EXECUTED SUCCESSFULLY\n"
            if verdict.suggestions:
                text += "MANDATORY RECOMMENDATIONS FOR FUTURE ACTIONS:\n" + "".join(
                    f"{i}. {s}\n" for i, s in enumerate(verdict.suggestions, 1)
                )
        else:
            text = texts.critical_timeline(
                action_type, reflection.get("error_message"), verdict.suggestions
            )
        if verdict.is_spinning:
            text += "\n" + texts.spin_timeline(
                self.language, action_type, verdict.reason, verdict.suggestions
            )
        return text + _next_actions(self.language, verdict.next_actions)


def _next_actions(language: str, actions: list[str]) -> str:
    """The analysis' concrete next actions, for the text the agent reads ("" for none)."""
    if not actions:
        return ""
    head = "**下一步**:\n" if language == "zh" else "**Do next**:\n"
    return "\n" + head + "".join(f"- {action}\n" for action in actions)
