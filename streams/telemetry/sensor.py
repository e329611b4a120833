"""A Faust sensor that says at the default log level when the worker rebalances."""

from __future__ import annotations

import logging
import time
from typing import Any

import faust

log = logging.getLogger("loopwarden.worker")


class RebalanceLog(faust.Sensor):
    """Logs each rebalance's start and end with the input partitions assigned after it."""

    def __init__(self, app: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.app = app
        self.rebalances = 0
        """Rebalances completed (the worker has joined its group once this is > 0)."""

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


def describe_assignment(app: Any) -> str:
    """``topic[0,1,3] …`` of the consumer's input partitions (changelogs aside)."""
    try:
        assignment = app.consumer.assignment()
    except Exception:
        return "assignment unknown"
    by_topic: dict[str, list[int]] = {}
    for tp in assignment:
        if not tp.topic.endswith("-changelog"):
            by_topic.setdefault(tp.topic, []).append(tp.partition)
    if not by_topic:
        return "no input partitions assigned"
    return " ".join(f"{t}{sorted(p)}" for t, p in sorted(by_topic.items()))
