"""One board of declared tool outages per worker, fed by the tool-outages topic.

The monitor asks it whether a failure is an outage's (not counted against the agent);
the fleet role asks it whether a failure belongs to an outage already declared (then
it goes to the tool's owner from every partition). Both roles in one worker share one
board and one reader of the topic (keyed by tool, every partition, from the start).

Notices are rare, so the reader waits ``kafka.idle_fetch_max_wait_ms`` (500 ms) in a
fetch after a notice rather than the stream's ``kafka.fetch_max_wait_ms`` (10 ms), and
twice as long after each empty fetch, up to :data:`QUIET_WAIT_FACTOR` times that (2 s):
an outage is known at most that much later. With the short wait this one reader
fetched about 70 times a second for the worker's whole life (an idle monitor took 6 %
of a core, and the embedded broker 7–10 % for it); at a steady 500 ms it was still a
third of an idle worker's fetches.
"""

from __future__ import annotations

import asyncio
import logging

from loopwarden.agents.fleet.outage_board import OutageBoard
from loopwarden.schemas import codec
from loopwarden.settings import Settings
from loopwarden.streams.runtime.app import LoopwardenApp
from loopwarden.streams.runtime.resources import WorkerResources

log = logging.getLogger(__name__)
QUIET_WAIT_FACTOR = 4
"""While no notice comes, the reader's fetch wait doubles up to this many times
``kafka.idle_fetch_max_wait_ms`` (2 s by default)."""


def notice_reader_settings(settings: Settings) -> Settings:
    """The settings of the board's reader: its fetch wait starts at
    ``kafka.idle_fetch_max_wait_ms`` and grows to :data:`QUIET_WAIT_FACTOR` times it."""
    idle_ms = settings.kafka.idle_fetch_max_wait_ms
    kafka = settings.kafka.model_copy(
        update={"fetch_max_wait_ms": idle_ms, "idle_fetch_max_wait_ms": QUIET_WAIT_FACTOR * idle_ms}
    )
    return settings.model_copy(update={"kafka": kafka})


def follow_outage_notices(app: LoopwardenApp, board: OutageBoard) -> None:
    """Declare the task that follows the tool-outages topic into ``board`` (from every
    partition, from the start); a worker declares it once, for the board its monitor
    and fleet share (:func:`shared_outage_board`)."""
    settings = app.loopwarden
    topic = settings.topics.tool_outages
    reader_settings = notice_reader_settings(settings)

    @app.task
    async def follow_tool_outages() -> None:
        """The fleet role's outage notices, from every partition, into the board."""
        from loopwarden.streams.client.subscriber import TopicSubscriber

        while True:
            try:
                subscriber = TopicSubscriber(
                    topic, lambda r: codec.loads(r.value), reader_settings, from_beginning=True
                )
                async with subscriber:
                    async for notice in subscriber:
                        board.note(notice)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # failures keep being counted meanwhile
                log.warning("following %s failed (%s); retrying in 5 s", topic, exc)
                await asyncio.sleep(5)


def shared_outage_board(app: LoopwardenApp, resources: WorkerResources) -> OutageBoard:
    """The worker's one board of declared tool outages, shared by its monitor and its
    fleet; the task that follows the tool-outages topic into it is declared on ``app``
    when the first of them asks."""

    def followed() -> OutageBoard:
        board = OutageBoard()
        follow_outage_notices(app, board)
        return board

    return resources.shared(OutageBoard, followed)
