"""The loop rules of the tools our users run, as detectors, to compare against.

Each follows the tool's public source (constants as published there), on
loopwarden's events: a call is its canonical signature, an observation its result
digest, an error a failed action, a message a ``turn: "message"`` text.

- ``openhands_stuck`` — OpenHands' ``StuckDetector``: the last 4 calls identical with
  identical observations; the last 3 identical calls all failing; the last 3 messages
  identical with nothing in between (monologue); the last 6 steps alternating between
  two (call, observation) pairs (A B A B A B).
- ``gemini_tool_loop`` — Gemini CLI's ``LoopDetectionService`` tool-call check: the same
  call (name and arguments) 5 times in a row (``TOOL_CALL_LOOP_THRESHOLD``).
- ``gemini_content_loop`` — its content check: a 50-character chunk of the model's text
  (``CONTENT_CHUNK_SIZE``) seen 10 times (``CONTENT_LOOP_THRESHOLD``) in the last 5000
  characters, on average at most 5 chunks apart.
- ``roo_repetition`` — Roo Code's ``ToolRepetitionDetector``: the same call (name and
  sorted parameters) 3 times in a row (``consecutiveIdenticalToolCallLimit``).

Not reproduced: Gemini CLI's LLM check after 30 turns and OpenHands' context-window
errors (neither has an equivalent in the events).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any

from loopwarden.agents.spin import pattern_texts as texts
from loopwarden.agents.spin.detector import Detector, Finding, Observation, register

OPENHANDS_REPEATS, OPENHANDS_ERRORS, OPENHANDS_MONOLOGUE, OPENHANDS_ALTERNATING = 4, 3, 3, 6
GEMINI_TOOL_CALLS, GEMINI_CHUNK, GEMINI_CHUNKS, GEMINI_HISTORY = 5, 50, 10, 5000
ROO_LIMIT = 3


def _step(seen: Observation) -> list[Any]:
    """One step as OpenHands compares them: [kind, call or text, observation, failed]."""
    payload = seen.event.payload
    if payload.turn == "message":
        return ["m", payload.result or "", None, False]
    return ["c", seen.signature, seen.result_key, payload.failed]


@register
@dataclass(slots=True)
class OpenHandsStuck(Detector):
    """The last six steps."""

    name = "openhands_stuck"
    uses_signature = True
    steps: list[list[Any]] = field(default_factory=list)

    def observe(self, seen: Observation) -> Finding | None:
        if seen.same_step:
            return None
        self.steps = [*self.steps, _step(seen)][-OPENHANDS_ALTERNATING:]
        scenario = self._scenario()
        if scenario is None:
            return None
        ids = (seen.event.event_id,)
        lang = seen.settings.language
        return self.pattern_finding(seen, scenario, texts.NO_PROGRESS_SUGGESTIONS[lang], ids, 1)

    def _scenario(self) -> str | None:
        steps = self.steps
        last = steps[-1]
        calls = [s for s in steps if s[0] == "c"]
        if last[0] == "c" and len(steps) >= OPENHANDS_REPEATS:
            tail = steps[-OPENHANDS_REPEATS:]
            same = all(s[0] == "c" and s[1] == last[1] and s[2] == last[2] for s in tail)
            if same and last[2] is not None:
                return "OpenHands: the same action and observation 4 times"
        if last[0] == "c" and last[3] and len(calls) >= OPENHANDS_ERRORS:
            tail = steps[-OPENHANDS_ERRORS:]
            if all(s[0] == "c" and s[1] == last[1] and s[3] for s in tail):
                return "OpenHands: the same action failing 3 times"
        if last[0] == "m" and len(steps) >= OPENHANDS_MONOLOGUE:
            tail = steps[-OPENHANDS_MONOLOGUE:]
            if all(s[0] == "m" and s[1] == last[1] and s[1] for s in tail):
                return "OpenHands: the same message 3 times (monologue)"
        if len(steps) == OPENHANDS_ALTERNATING and all(s[0] == "c" for s in steps):
            pairs = [(s[1], s[2]) for s in steps]
            a, b = pairs[0], pairs[1]
            if a != b and pairs[0::2] == [a] * 3 and pairs[1::2] == [b] * 3:
                return "OpenHands: alternating between two actions 6 times"
        return None

    def snapshot(self) -> Any:
        return self.steps

    @classmethod
    def restore(cls, data: Any) -> OpenHandsStuck:
        return cls([list(step) for step in data])


@dataclass(slots=True)
class _ConsecutiveCalls(Detector):
    """The same call N times in a row (messages do not break the run: they are not calls)."""

    limit = 0
    source = ""
    signature: str | None = None
    count: int = 0

    def observe(self, seen: Observation) -> Finding | None:
        if seen.same_step or seen.event.payload.turn == "message":
            return None
        if seen.signature == self.signature:
            self.count += 1
        else:
            self.signature, self.count = seen.signature, 1
        if self.count < self.limit:
            return None
        self.signature, self.count = None, 0  # both tools reset once they fire
        lang = seen.settings.language
        reason = f"{self.source}: the same call {self.limit} times in a row"
        ids = (seen.event.event_id,)
        return self.pattern_finding(seen, reason, texts.NO_PROGRESS_SUGGESTIONS[lang], ids, 1)

    def snapshot(self) -> Any:
        return [self.signature, self.count]

    @classmethod
    def restore(cls, data: Any) -> _ConsecutiveCalls:
        signature, count = data
        return cls(signature, int(count))


@register
@dataclass(slots=True)
class GeminiToolLoop(_ConsecutiveCalls):
    name = "gemini_tool_loop"
    uses_signature = True
    limit = GEMINI_TOOL_CALLS
    source = "Gemini CLI"


@register
@dataclass(slots=True)
class RooRepetition(_ConsecutiveCalls):
    name = "roo_repetition"
    uses_signature = True
    limit = ROO_LIMIT
    source = "Roo Code"


@register
@dataclass(slots=True)
class GeminiContentLoop(Detector):
    """The last 5000 characters of the model's text."""

    name = "gemini_content_loop"
    text: str = ""

    def observe(self, seen: Observation) -> Finding | None:
        payload = seen.event.payload
        if payload.turn != "message" or not payload.result:
            return None
        self.text = (self.text + payload.result)[-GEMINI_HISTORY:]
        if not _chunk_loop(self.text):
            return None
        self.text = ""
        lang = seen.settings.language
        reason = "Gemini CLI: the same text repeated 10 times"
        ids = (seen.event.event_id,)
        return self.pattern_finding(seen, reason, texts.MONOLOGUE_SUGGESTIONS[lang], ids, 1)

    def snapshot(self) -> Any:
        return self.text

    @classmethod
    def restore(cls, data: Any) -> GeminiContentLoop:
        return cls(str(data))


def _chunk_loop(text: str) -> bool:
    """A 50-character chunk occurring 10 times, on average at most 5 chunks apart."""
    seen: dict[int, list[int]] = {}
    for start in range(0, max(0, len(text) - GEMINI_CHUNK + 1)):
        key = zlib.crc32(text[start : start + GEMINI_CHUNK].encode())
        where = seen.setdefault(key, [])
        where.append(start)
        if len(where) >= GEMINI_CHUNKS:
            recent = where[-GEMINI_CHUNKS:]
            if (recent[-1] - recent[0]) / (GEMINI_CHUNKS - 1) <= 5 * GEMINI_CHUNK:
                return True
    return False
