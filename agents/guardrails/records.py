"""From a raw loop-completions record to guardrail results, with no broker involved.

Events are positioned and routed like actions (see
:mod:`loopwarden.agents.monitor.records`), keyed by family instead of loop. A
family idle for the idle TTL of event time (``FAMILY_STATES``', applied by the kit's
view) starts fresh when its next event arrives, so the outcome depends on the events
alone, not on when a sweep ran.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loopwarden.agents.guardrails.declaration import FAMILY_STATES
from loopwarden.agents.guardrails.engine import GuardrailEngine, Output
from loopwarden.agents.guardrails.state import FamilyState
from loopwarden.agents.provenance import guardrails_stamp
from loopwarden.errors import FieldError
from loopwarden.schemas import codec
from loopwarden.schemas.completions import (
    LoopCompletion,
    ReflectionCached,
    validate_guardrail_event,
)
from loopwarden.schemas.dead_letter import DeadLetter, SourcePosition
from loopwarden.schemas.families import family_of
from loopwarden.schemas.outputs import RerunDecisionRecord, WarningRecord
from loopwarden.schemas.records import decode_record
from loopwarden.settings import GuardrailSettings, Settings
from loopwarden.streams.runtime.state.protocol import KeyedOutcome, KeyedRecord
from loopwarden.streams.runtime.state.reroute import routed
from loopwarden.streams.runtime.state.view import StateView


@dataclass(slots=True)
class GuardrailRecordOutcome(KeyedOutcome[FamilyState]):
    """What one record produced; ``states`` are the families to write back; ``events``
    counts the completions and overrides the record held."""

    replies: list[tuple[str, Output]] = field(default_factory=list)
    decisions: list[RerunDecisionRecord] = field(default_factory=list)
    warnings: list[WarningRecord] = field(default_factory=list)

    OUTPUTS = (("decisions", "decisions"), ("warnings", "warnings"))


class GuardrailProcessor:
    """Decode completions/overrides and apply them to family state."""

    def __init__(
        self,
        settings: GuardrailSettings | None = None,
        max_event_bytes: int = 256 * 1024,
        partitions: int = 0,
        idle_ttl_s: float = float("inf"),
    ) -> None:
        """``idle_ttl_s``: the families' idle TTL the states are given with, named in the
        outputs' stamp (the kit's views apply it)."""
        settings = settings or GuardrailSettings()
        stamp = guardrails_stamp(settings, idle_ttl_s, max_event_bytes)
        self.engine = GuardrailEngine(settings, stamp)
        self.max_event_bytes = max_event_bytes
        self.partitions = partitions

    @classmethod
    def for_settings(cls, settings: Settings, partitions: int = 0) -> GuardrailProcessor:
        """The processor every entry point uses: guardrails and limits from ``settings``."""
        limits = settings.limits
        return cls(
            settings.guardrails,
            limits.max_event_bytes,
            partitions=partitions,
            idle_ttl_s=FAMILY_STATES.idle_ttl_s(settings),
        )

    @property
    def stamp(self) -> dict[str, Any]:
        """The ``produced_by`` stamp of this processor's outputs."""
        return self.engine.stamp

    def process(
        self, record: KeyedRecord, states: StateView[FamilyState]
    ) -> GuardrailRecordOutcome:
        """Process one record with its families' ``states``; a re-routed record
        (``record.origin`` set) is applied here; the record's headers are not read."""
        value, key, source, origin = record.value, record.key, record.source, record.origin
        decoded = decode_record(value, key, source, self.max_event_bytes, validate_guardrail_event)
        outcome = GuardrailRecordOutcome(
            states=states.changed, dead_letters=decoded.dead_letters, events=len(decoded.events)
        )
        changed = states.changed
        here = routed(
            decoded.events, source, origin, self.partitions, _family_key, outcome.reroutes
        )
        for index, event, at in here:
            family = family_of(event.loop_id)
            state = states.current(family, event.occurred_at)
            outcome.seen.append((event.event_id, event.loop_id))
            remembered = state.results.get(event.event_id)
            if remembered is not None or state.applied.applied(at):
                # a duplicate or a record processed again after a restart: answer the same
                if remembered is not None:
                    outcome.replies.append((event.event_id, remembered))
                continue
            problem = (
                self.engine.unscheduled(
                    state,
                    event.loop_id,
                    event.payload.max_reruns,
                    event.payload.override_max_reruns,
                )
                if isinstance(event, LoopCompletion)
                else None
            )
            if problem is not None:
                outcome.dead_letters.append(_rejected(event, problem, source, key, index))
                outcome.replies.append((event.event_id, {"status": "rejected", "error": problem}))
            elif isinstance(event, LoopCompletion):
                result = self.engine.complete(state, event)
                outcome.decisions.append(result.decision)
                outcome.warnings.extend(result.warnings)
                outcome.replies.append((event.event_id, result.result))
            elif isinstance(event, ReflectionCached):
                state.cache_reflection(event.loop_id, event.payload)
                state.remember(event.event_id, {"status": "cached"})
            else:
                outcome.replies.append((event.event_id, self.engine.override(state, event)))
            state.applied.mark(at)
            state.updated_at = max(state.updated_at, event.occurred_at)
            changed[family] = state
        return outcome

    def status(self, state: FamilyState | None, loop_id: str) -> Any:
        """The guardrails status of ``loop_id`` (None when unknown)."""
        return self.engine.status(state, loop_id) if state is not None else None


def _rejected(
    event: Any, problem: str, source: SourcePosition, key: bytes | None, index: int
) -> DeadLetter:
    """The dead letter of a completion that cannot be applied (``problem`` says why)."""
    value = codec.dumps(event.model_dump(mode="json", exclude_none=True))
    errors = (FieldError("loop_id", problem),)
    return DeadLetter("validation", problem, value, source, key, errors, index)


def _family_key(event: Any) -> str:
    """The key an event's state lives under (its partition's)."""
    return family_of(event.loop_id)
