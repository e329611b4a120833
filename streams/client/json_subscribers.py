"""Subscribers to loopwarden's JSON output topics: records as dicts.

Decisions, reflections and memory outcomes are JSON objects; a record holding a JSON
array (the memory outcomes of an Arrow record of writes) yields each object.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, ClassVar

from aiokafka import ConsumerRecord

from loopwarden.errors import EventDecodeError, LoopwardenError, NothingReceivedError
from loopwarden.schemas import codec
from loopwarden.schemas.families import family_of
from loopwarden.settings import Settings
from loopwarden.streams.client.subscriber import TopicSubscriber

log = logging.getLogger(__name__)


def _parse_json(record: ConsumerRecord[Any, Any]) -> dict[str, Any]:
    value = codec.loads(record.value)
    if not isinstance(value, dict):
        raise ValueError("expected a JSON object")
    return value


class JsonSubscriber(TopicSubscriber[dict[str, Any]]):
    """Records of one of loopwarden's JSON topics as dicts, de-duplicated by an id field.

    A record holding a JSON array (the memory outcomes of an Arrow record) yields each
    of its objects. Subclasses name the topic (a field of ``settings.topics``) and the
    id field; ``loop_id`` keeps one loop's records (the record key ``key_of`` gives).
    """

    topic_setting: ClassVar[str]
    identity_field: ClassVar[str | None] = None
    answer_field: ClassVar[str | None] = None  # the field naming the event answered

    @staticmethod
    def key_of(loop_id: str) -> str:
        """The record key of ``loop_id``'s records on this topic."""
        return loop_id

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        loop_id: str | None = None,
        from_beginning: bool = False,
        key: str | None = None,
    ) -> None:
        """``key``: a record key to follow instead of a loop's (a memory scope)."""
        settings = settings or Settings()
        if loop_id is not None:
            key = self.key_of(loop_id)
        field = self.identity_field
        super().__init__(
            getattr(settings.topics, self.topic_setting),
            _parse_json,
            settings,
            loop_id=key,
            from_beginning=from_beginning,
            identity=(lambda d: str(d.get(field))) if field else None,
        )

    def _items_of(self, record: ConsumerRecord[Any, Any]) -> list[dict[str, Any]]:
        if not record.value or record.value[:1] != b"[":
            return super()._items_of(record)
        try:
            items = codec.loads(record.value)
        except EventDecodeError as exc:
            items, reason = [], str(exc)
        else:
            reason = "expected an array of JSON objects"
        if items and all(isinstance(item, dict) for item in items):
            return items
        log.warning(
            "skipping unreadable record %s[%d]@%d: %s",
            record.topic,
            record.partition,
            record.offset,
            reason,
        )
        return []

    async def answer_to(self, event_id: str, timeout_s: float = 30.0) -> dict[str, Any]:
        """The record answering the event ``event_id`` (a decision for a completion, an
        outcome for a memory write); raises :class:`NothingReceivedError` after
        ``timeout_s``.

        Enter the subscriber *before* publishing the event: it starts at the end of
        the topic, so an answer written in between would be missed otherwise.
        """
        field = self.answer_field
        if field is None:
            raise LoopwardenError(f"{type(self).__name__} records do not answer events")

        async def first() -> dict[str, Any]:
            async for item in self:
                if item.get(field) == event_id:
                    return item
            raise LoopwardenError("subscriber stopped")

        try:
            return await asyncio.wait_for(first(), timeout_s)
        except TimeoutError:
            raise NothingReceivedError(
                f"no answer to event {event_id} on {self.topic} within {timeout_s:g} s "
                "(is a worker running? `loopwarden worker`)"
            ) from None


class DecisionSubscriber(JsonSubscriber):
    """Rerun decisions (seed 003 responses plus ``decision_id``), for one family or all.

    ``loop_id`` may be any loop of the family (``loop_001`` or ``loop_001_r2``).
    :meth:`answer_to` waits for the decision on one completion.
    """

    topic_setting = "decisions"
    identity_field = "decision_id"
    answer_field = "trigger_event_id"
    key_of = staticmethod(family_of)


class FleetWarningSubscriber(JsonSubscriber):
    """Fleet warnings (findings about a family of delegated loops), for one family (its
    root loop id as ``loop_id``) or all."""

    topic_setting = "fleet_warnings"
    identity_field = "warning_id"


class AnalysisSubscriber(JsonSubscriber):
    """The analyst's reflections (verdict, suggestions, timeline text), per loop or all."""

    topic_setting = "reflections"
    identity_field = "reflection_id"


class MemoryOutcomeSubscriber(JsonSubscriber):
    """What became of memory writes (stored, duplicate, stored_with_conflicts, ...), and
    maintenance reports (scope ``*``); :meth:`answer_to` waits for one write's."""

    topic_setting = "memory_outcomes"
    answer_field = "event_id"

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        scope: str | None = None,
        from_beginning: bool = False,
    ) -> None:
        super().__init__(settings, key=scope, from_beginning=from_beginning)  # keyed by scope
