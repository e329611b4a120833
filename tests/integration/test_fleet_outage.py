"""A tool down for everyone, end to end: one fleet warning, each loop told, and the
monitor stops counting the outage's failures against the agents."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from loopwarden.schemas.fleet import FleetWarning
from loopwarden.streams.client.json_subscribers import FleetWarningSubscriber
from loopwarden.streams.client.publisher import AsyncPublisher
from loopwarden.streams.client.subscriber import WarningSubscriber

from .adapter_harness import loops_on_one_partition
from .conftest import create_topics, isolated_settings

pytestmark = pytest.mark.integration

ERROR = "503 Service Unavailable: upstream gateway timed out (request {})"


async def next_matching(items, keep, timeout_s: float = 60.0):
    """The next item of the iterator ``items`` that ``keep`` accepts (one iterator for
    the whole test: a batch's other items stay in it)."""

    async def first():
        while True:
            item = await anext(items)
            if keep(item):
                return item

    return await asyncio.wait_for(first(), timeout_s)


def test_an_outage_is_one_fleet_warning_each_loop_is_told_and_failures_stop_counting(
    broker, worker_factory
):
    settings = isolated_settings(broker, "outage")  # the seed profile: every failure warns
    create_topics(settings)
    worker_factory(settings)
    tag = uuid.uuid4().hex[:6]
    # one partition: the worker reads the tool's success before its failures, and the
    # late failures after the outage, in the order they were published
    earlier, *loops = loops_on_one_partition(f"{tag}-agent", 6, settings.topics.partitions)
    lates = loops_on_one_partition(f"{tag}-late", 20, settings.topics.partitions)

    async def scenario():
        async with (
            AsyncPublisher(settings) as publisher,
            WarningSubscriber(settings, from_beginning=True) as warning_subscriber,
            FleetWarningSubscriber(settings, from_beginning=True) as fleet_subscriber,
        ):
            warnings, fleet = aiter(warning_subscriber), aiter(fleet_subscriber)
            await publisher.publish(earlier, "web_search", result="3 hits")  # it worked
            for n, loop in enumerate(loops):
                error = ERROR.format(f"{n:04x}c0ffee{n}")
                await publisher.publish(loop, "web_search", success=False, error_message=error)
            await publisher.flush()
            outage = FleetWarning.model_validate(
                await next_matching(fleet, lambda w: w["kind"] == "tool_outage")
            )
            told = set()
            while told != set(loops):
                warning = await next_matching(warnings, lambda w: w.kind == "tool_outage")
                told.add(warning.loop_id)

            # a failure the outage covers is not counted: no action_failed for it (a
            # spin of another action after it is the barrier that says it was applied)
            for attempt in range(20):
                late = lates[attempt]
                error = ERROR.format(f"{attempt:04x}beef")
                failure = await publisher.publish(
                    late, "web_search", success=False, error_message=error
                )
                for _ in range(3):
                    await publisher.publish(late, "read_file", params={"path": "a.py"})
                await publisher.flush()
                kinds: list[str] = []
                # the monitor's spin warning says the failure was applied; the fleet's
                # tool_outage warning for it comes from another agent, in any order
                while "action_type_spin" not in kinds or "failure:tool_outage" not in kinds:
                    warning = await next_matching(warnings, lambda w, late=late: w.loop_id == late)
                    kinds.append(
                        str(warning.kind)
                        if warning.trigger_event_id != failure
                        else f"failure:{warning.kind}"
                    )
                if not any(kind.startswith("failure:action_failed") for kind in kinds):
                    return outage, attempt, kinds
            raise AssertionError("every late failure was still counted against its agent")

    outage, attempt, kinds = asyncio.run(scenario())
    assert outage.tool == "web_search" and set(outage.loop_ids) == set(loops)
    assert "503 Service Unavailable" in (outage.error or "")
    assert attempt < 20 and "failure:tool_outage" in kinds  # the late loop is told instead
