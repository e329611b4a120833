"""A Faust sensor that says at the default log level when the worker starts and rebalances."""

from __future__ import annotations

import logging
import time
from typing import Any

import faust

from loopwarden.streams.runtime.service_log import SERVICE_LOG

log = logging.getLogger("loopwarden.worker")


class LifecycleLog(faust.Sensor):
    """Logs the worker's start (sensors start before the consumer joins its group) and
    each rebalance's start and end with the input partitions assigned after it."""

    logger = SERVICE_LOG

    def __init__(self, app: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.app = app
        self.rebalances = 0
        """Rebalances completed (the worker has joined its group once this is > 0)."""

    async def on_start(self) -> None:
        settings = self.app.loopwarden
        log.info(
            "worker started: group %s, roles %s, broker %s%s",
            settings.app_id,
            ",".join(sorted(settings.roles)),
            settings.kafka.bootstrap_servers,
            f", web port {settings.web_port}" if settings.web_port else "",
        )

    def on_rebalance_start(self, app: Any) -> dict[str, Any]:
        log.info("rebalance #%d started", app.rebalancing_count)
        return {"started": time.monotonic()}

    def on_rebalance_end(self, app: Any, state: dict[str, Any]) -> None:
        self.rebalances += 1
        took = time.monotonic() - state.get("started", time.monotonic())
        log.info(
            "rebalance #%d done in %.1f s: %s",
            app.rebalancing_count,
            took,
            describe_assignment(app),
        )


def is_input_topic(topic: str) -> bool:
    """False for Faust's own topics (table changelogs, the assignor's leader topic)."""
    return not topic.endswith("-changelog") and "-__assignor-__" not in topic


def describe_assignment(app: Any) -> str:
    """``topic[0,1,3] …`` of the consumer's input partitions (changelogs aside)."""
    try:
        assignment = app.consumer.assignment()
    except Exception:
        return "assignment unknown"
    by_topic: dict[str, list[int]] = {}
    for tp in assignment:
        if is_input_topic(tp.topic):
            by_topic.setdefault(tp.topic, []).append(tp.partition)
    if not by_topic:
        return "no input partitions assigned"
    return " ".join(f"{t}{sorted(p)}" for t, p in sorted(by_topic.items()))
