"""Tasks from the agent's side: start one and get experience advice, end it (seed 004).

>>> async with AsyncPublisher(settings) as publisher:
...     advice = await start_task(publisher, "order-42", "search iPhone 15 on Taobao and order it",
...                               intent="shopping", app_name="taobao", app_version="10.2")
...     context.append(advice.timeline_message)       # direct_replay: the steps to take
...     ...                                           # publish the actions as usual
...     await end_task(publisher, "order-42", success=True)

Task events travel on the actions topic through the publisher's own queue, so
they stay in order with the loop's actions. The worker answers a start on the
advice topic; a successful exploration is learned at its end, and a replay's
outcome updates the success rate of the experience it followed.
"""

from __future__ import annotations

import time
from typing import Any

from loopwarden.schemas import codec
from loopwarden.schemas.events import envelope
from loopwarden.schemas.tasks import Advice, TaskEnd, TaskStart, validate_task_event
from loopwarden.streams.client.json_subscribers import JsonSubscriber
from loopwarden.streams.client.publisher import AsyncPublisher


class AdviceSubscriber(JsonSubscriber):
    """Experience advice, for one loop or all; :meth:`advice_for` waits for one start's."""

    topic_setting = "advice"
    identity_field = "advice_id"
    answer_field = "task_event_id"

    async def advice_for(self, task_event_id: str, timeout_s: float = 30.0) -> Advice:
        """The advice answering the task start ``task_event_id`` (enter the subscriber
        before publishing the start); raises ``NothingReceivedError`` after ``timeout_s``."""
        return Advice.model_validate(await self.answer_to(task_event_id, timeout_s))


def _task_event(kind: str, loop_id: str, payload: dict[str, Any], event_id: str | None) -> Any:
    now = time.time()
    return validate_task_event(
        envelope(
            payload,
            loop_id=loop_id,
            kind=kind,
            event_id=event_id,
            occurred_at=now,
            published_at=now,
        )
    )


def task_start_event(
    loop_id: str, task_description: str, *, event_id: str | None = None, **fields: Any
) -> TaskStart:
    """A validated (and redacted) task start; ``fields`` as in
    :class:`~loopwarden.schemas.tasks.TaskSpec` (intent, app_name, app_version,
    device_info, tags)."""
    payload = {"task_description": task_description, **fields}
    event: TaskStart = _task_event("task_start", loop_id, payload, event_id)
    return event


def task_end_event(
    loop_id: str, success: bool, *, event_id: str | None = None, **fields: Any
) -> TaskEnd:
    """A validated task end (``feedback_score``, ``reason``)."""
    event: TaskEnd = _task_event("task_end", loop_id, {"success": success, **fields}, event_id)
    return event


def publish_task_event(publisher: AsyncPublisher, event: TaskStart | TaskEnd) -> str:
    """Queue a task event behind the loop's actions; return its id."""
    data = codec.dumps(event.model_dump(mode="json", exclude_none=True))
    publisher.enqueue(event.loop_id, event.event_id, data)
    return event.event_id


async def start_task(
    publisher: AsyncPublisher,
    loop_id: str,
    task_description: str,
    *,
    timeout_s: float = 30.0,
    event_id: str | None = None,
    **fields: Any,
) -> Advice:
    """Publish a task start and return the worker's advice (strategy, steps, slots, what
    to avoid, a timeline text). Raises ``NothingReceivedError`` when no worker with the
    ``experience`` role answers within ``timeout_s``."""
    event = task_start_event(loop_id, task_description, event_id=event_id, **fields)
    async with AdviceSubscriber(publisher.settings, loop_id=loop_id) as advice:
        publish_task_event(publisher, event)
        await publisher.flush()
        return await advice.advice_for(event.event_id, timeout_s)


async def end_task(
    publisher: AsyncPublisher,
    loop_id: str,
    success: bool,
    *,
    feedback_score: float | None = None,
    reason: str | None = None,
    event_id: str | None = None,
) -> str:
    """Publish the end of the loop's task (after its last action) and wait for the ack."""
    fields: dict[str, Any] = {}
    if feedback_score is not None:
        fields["feedback_score"] = feedback_score
    if reason is not None:
        fields["reason"] = reason
    event = task_end_event(loop_id, success, event_id=event_id, **fields)
    publish_task_event(publisher, event)
    await publisher.flush()
    return event.event_id
