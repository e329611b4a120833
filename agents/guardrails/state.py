"""Per-family guardrail state: traces, fatigue, rerun count, bias history, overrides."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loopwarden.schemas import codec
from loopwarden.schemas.positions import AppliedPositions

SNAPSHOT_VERSION = 2
_REMEMBERED_RESULTS = 16
_MAX_TRACES = 64
_MAX_BIAS_TAGS = 256


@dataclass(slots=True)
class FamilyState:
    """Everything the guardrails keep about one loop family (bounded)."""

    family: str
    partition: int = -1
    traces: dict[str, dict[str, Any]] = field(default_factory=dict)
    bias_history: dict[str, int] = field(default_factory=dict)
    fatigue: float = 0.0
    max_index: int = 0
    last_scores: list[float] | None = None
    max_reruns: int | None = None
    override_fatigue: bool = False
    override_max_reruns: bool = False
    overridden_by: str | None = None
    override_reason: str | None = None
    reasoning: dict[str, Any] | None = None
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    reflections: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    applied: AppliedPositions = field(default_factory=AppliedPositions)
    updated_at: float = 0.0

    def put_trace(self, loop_id: str, trace: dict[str, Any]) -> None:
        """Store a loop's trace, keeping the newest ``_MAX_TRACES``."""
        self.traces.pop(loop_id, None)
        self.traces[loop_id] = trace
        while len(self.traces) > _MAX_TRACES:
            del self.traces[next(iter(self.traces))]
        while len(self.bias_history) > _MAX_BIAS_TAGS:
            del self.bias_history[min(self.bias_history, key=self.bias_history.__getitem__)]

    def cache_reflection(self, loop_id: str, reflection: dict[str, Any], keep: int = 3) -> None:
        """Stage 5: keep a loop's last ``keep`` reflections (and at most 64 loops)."""
        cached = self.reflections.pop(loop_id, [])
        cached.append(reflection)
        cached.sort(key=lambda r: r.get("occurred_at") or 0.0)  # analyses finish out of order
        self.reflections[loop_id] = cached[-keep:]
        while len(self.reflections) > _MAX_TRACES:
            del self.reflections[next(iter(self.reflections))]

    def remember(self, event_id: str, result: dict[str, Any]) -> None:
        """Keep the result of a processed event (answers a duplicate the same way)."""
        self.results[event_id] = result
        while len(self.results) > _REMEMBERED_RESULTS:
            del self.results[next(iter(self.results))]

    def snapshot(self) -> bytes:
        """Encode for the table (an exact-size copy: it stays in memory)."""
        return codec.dumps_state(
            {
                "v": SNAPSHOT_VERSION,
                "p": self.partition,
                "tr": self.traces,
                "bh": self.bias_history,
                "fa": self.fatigue,
                "mi": self.max_index,
                "ls": self.last_scores,
                "mr": self.max_reruns,
                "of": self.override_fatigue,
                "om": self.override_max_reruns,
                "ob": self.overridden_by,
                "orr": self.override_reason,
                "rs": self.reasoning,
                "res": self.results,
                "rf": self.reflections,
                "off": self.applied.snapshot(),
                "ts": self.updated_at,
            }
        )

    @classmethod
    def restore(cls, family: str, data: bytes) -> FamilyState:
        """Inverse of :meth:`snapshot`."""
        raw = codec.loads_state(data)
        version = raw.get("v")
        if version not in (1, SNAPSHOT_VERSION):
            raise ValueError(f"unknown family state snapshot version {version!r}")
        applied = AppliedPositions.from_state_snapshot(raw)
        return cls(
            family=family,
            partition=raw["p"],
            traces=raw["tr"],
            bias_history=raw["bh"],
            fatigue=raw["fa"],
            max_index=raw["mi"],
            last_scores=raw["ls"],
            max_reruns=raw["mr"],
            override_fatigue=raw["of"],
            override_max_reruns=raw["om"],
            overridden_by=raw["ob"],
            override_reason=raw["orr"],
            reasoning=raw["rs"],
            results=raw["res"],
            reflections=raw.get("rf", {}),
            applied=applied,
            updated_at=raw["ts"],
        )
