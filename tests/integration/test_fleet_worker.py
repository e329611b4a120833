"""The fleet role in a worker: the loop-health page's fleet view in headless Chromium (a
family as a tree coloured by what each loop was told, a tool in outage, the fleet
warnings, and a screenshot of the tree whose pixels say the family was stopped), and a
tool down for everyone end to end (one fleet warning, each loop told, the monitor no
longer counting the outage's failures against the agents)."""

from __future__ import annotations

import asyncio
import base64
import uuid

import aiohttp
import pytest

from loopwarden.schemas.fleet import FleetWarning
from loopwarden.streams.client.json_subscribers import FleetWarningSubscriber
from loopwarden.streams.client.publisher import AsyncPublisher
from loopwarden.streams.client.subscriber import WarningSubscriber
from loopwarden.streams.tools.broker import free_port

from .adapter_harness import loops_on_one_partition
from .browser import CHROMIUM, CHROMIUM_FLAGS
from .conftest import WorkerProcess, create_topics, isolated_settings

pytestmark = pytest.mark.integration

TASK = "Summarise the open invoices of ACME for November"
ERROR = "503 Service Unavailable: upstream ledger timed out (request {})"
STOP_RGB = (0xFE, 0xE4, 0xE2)  # .node.told-stop's background
WARN_RGB = (0xFE, 0xF0, 0xC7)  # .node.told-warn's

# share of a screenshot's pixels within 6 of ``rgb`` on every channel, counted by the
# browser itself (a canvas): no image library needed
COUNT_PIXELS = """async ([png, rgb]) => {
  const image = new Image();
  image.src = "data:image/png;base64," + png;
  await image.decode();
  const canvas = document.createElement("canvas");
  canvas.width = image.width; canvas.height = image.height;
  const context = canvas.getContext("2d");
  context.drawImage(image, 0, 0);
  const data = context.getImageData(0, 0, image.width, image.height).data;
  let hits = 0;
  for (let i = 0; i < data.length; i += 4) {
    if (Math.abs(data[i] - rgb[0]) <= 6 && Math.abs(data[i + 1] - rgb[1]) <= 6
        && Math.abs(data[i + 2] - rgb[2]) <= 6) hits++;
  }
  return hits / (data.length / 4);
}"""


async def make_the_tool_fail_for_everyone(
    publisher: AsyncPublisher, tool: str, loops: list[str]
) -> None:
    """``tool``'s usual traffic (40 calls of eight loops, one in ten failing for the
    agent's own reason: the tool's usual failure rate, learned from the stream), then a
    moment where nine loops' calls fail, each its own way: the tool is down, and its
    next failures are judged for an outage. ``loops``: 17 loop ids."""
    usual, broken = loops[:8], loops[8:17]
    for n in range(40):
        if n % 10 == 9:
            error = "404 no such record"
            await publisher.publish(usual[n % 8], tool, success=False, error_message=error)
        else:
            await publisher.publish(usual[n % 8], tool, result=f"{n} rows")
    for loop, word in zip(
        broken, ("AND", "OR", "NOT", "NEAR", "(", ")", '"', "*", "~"), strict=True
    ):
        error = f"400 bad query syntax near {word!r}"
        await publisher.publish(loop, tool, success=False, error_message=error)


@pytest.fixture(scope="module")
def fleet_worker(broker, tmp_path_factory):
    """One worker with the monitor and fleet roles (the seed profile: every failure
    warns), its web port open, for this module's tests."""
    settings = isolated_settings(broker, "fleet")
    settings = settings.model_copy(
        update={
            "roles": frozenset({"monitor", "fleet"}),
            "web_port": free_port(),
            "api": settings.api.model_copy(update={"token": "t0ken"}),
        }
    )
    create_topics(settings)
    worker = WorkerProcess(settings, tmp_path_factory.mktemp("fleet") / "worker.log").start()
    yield settings
    assert worker.stop() == 0, worker.log()[-3000:]


def test_the_fleet_view_shows_a_stopped_family_as_a_tree_and_a_tool_in_outage(
    fleet_worker, tmp_path
):
    from playwright.async_api import async_playwright

    settings = fleet_worker
    tag = uuid.uuid4().hex[:6]
    root = f"{tag}-planner"
    chain = [(root, "planner", None)]
    for n in range(1, 6):  # planner → clerk → planner → clerk → planner → clerk
        chain.append((f"{tag}-{n}", "clerk" if n % 2 else "planner", chain[-1][0]))

    async def publish() -> None:
        async with AsyncPublisher(settings) as publisher:
            for loop, agent, parent in chain:
                family = {} if parent is None else {"parent_loop_id": parent, "root_loop_id": root}
                await publisher.publish(loop, "delegate", agent=agent, task=TASK, **family)
            # one partition: the worker reads the lookup's usual traffic before the
            # failures, in the order they were published
            loops = loops_on_one_partition(f"{tag}-books", 22, settings.topics.partitions)
            await make_the_tool_fail_for_everyone(publisher, "ledger_lookup", loops[:17])
            for n, loop in enumerate(loops[17:]):
                error = ERROR.format(f"{n:02x}d00dfeed")
                await publisher.publish(loop, "ledger_lookup", success=False, error_message=error)
            await publisher.flush()

    async def ready() -> None:  # the worker's web server answers once it has joined
        async with aiohttp.ClientSession() as session:
            for _ in range(300):
                try:
                    async with session.get(f"http://127.0.0.1:{settings.web_port}/ready") as r:
                        if r.status == 200:
                            return
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.3)  # polling the endpoint until it answers
        raise AssertionError("the worker never got ready")

    async def look() -> None:
        await ready()
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(
                executable_path=CHROMIUM, args=CHROMIUM_FLAGS
            )
            try:
                page = await browser.new_page(viewport={"width": 1200, "height": 900})
                await page.goto(
                    f"http://127.0.0.1:{settings.web_port}/loops?interval=0.3#token=t0ken"
                )
                await page.wait_for_function(
                    "document.getElementById('status').textContent === 'ready'", timeout=30_000
                )
                await publish()
                family = page.locator(f'#fleet-families .family[data-key="{root}"]')
                await family.wait_for(timeout=30_000)
                stopped = f'#fleet-families .family[data-key="{root}"] .node.told-stop'
                await page.wait_for_function(  # every loop of the chain told to stop
                    f"""document.querySelectorAll('{stopped}').length === 6""", timeout=30_000
                )
                assert "stopped" in (await family.get_attribute("class"))
                # a tree: each loop nested under its parent
                for loop, _, parent in chain[1:]:
                    nested = family.locator(f'li:has(> [data-key="{parent}"]) [data-key="{loop}"]')
                    assert await nested.count() == 1, f"{loop} is not under {parent}"
                labels = await family.locator(".node").all_text_contents()
                assert labels[0] == f"planner · {root}"
                tool = page.locator('#fleet-tools tr[data-key="ledger_lookup"]')
                await page.wait_for_function(
                    """document.querySelector('#fleet-tools tr[data-key="ledger_lookup"]')
                        ?.cells[6].textContent.includes('503 Service Unavailable')""",
                    timeout=30_000,
                )
                cells = await tool.locator("td").all_text_contents()
                assert cells[1:4] == ["54", "18", "33 %"] and cells[4:6] == ["22", "18"]
                kinds = await page.locator(
                    "#fleet-warnings tbody td:nth-child(3)"
                ).all_text_contents()
                assert sorted(kinds) == ["delegation_cycle", "delegation_cycle", "tool_outage"]

                shot = await family.screenshot(path=str(tmp_path / "family.png"))
                stop_share = await page.evaluate(
                    COUNT_PIXELS, [base64.b64encode(shot).decode(), STOP_RGB]
                )
                warn_share = await page.evaluate(
                    COUNT_PIXELS, [base64.b64encode(shot).decode(), WARN_RGB]
                )
                assert stop_share > 0.05, stop_share  # the stopped loops' colour fills the tree
                assert warn_share == 0.0  # no loop is left at "warned"
                await page.screenshot(path=str(tmp_path / "fleet.png"), full_page=True)
            finally:
                await browser.close()

    asyncio.run(look())


OUTAGE = "503 Service Unavailable: upstream gateway timed out (request {})"


async def next_matching(items, keep, timeout_s: float = 60.0):
    """The next item of the iterator ``items`` that ``keep`` accepts (one iterator for
    the whole test: a batch's other items stay in it)."""

    async def first():
        while True:
            item = await anext(items)
            if keep(item):
                return item

    return await asyncio.wait_for(first(), timeout_s)


LATE_LOOPS = 100
"""Late loops tried at most, one after the other, each waiting for its own verdict."""


def test_an_outage_is_one_fleet_warning_each_loop_is_told_and_failures_stop_counting(
    fleet_worker,
):
    settings = fleet_worker
    tag = uuid.uuid4().hex[:6]
    # one partition: the worker reads the tool's success before its failures, and the
    # late failures after the outage, in the order they were published
    everyone = loops_on_one_partition(f"{tag}-agent", 22, settings.topics.partitions)
    before, loops = everyone[:17], everyone[17:]
    # the worker's board reads the outage notice within a fetch or two, later on a busy
    # machine (make test runs four processes on two cores): late loops until it has
    lates = loops_on_one_partition(f"{tag}-late", LATE_LOOPS, settings.topics.partitions)

    async def scenario():
        async with (
            AsyncPublisher(settings) as publisher,
            WarningSubscriber(settings, from_beginning=True) as warning_subscriber,
            FleetWarningSubscriber(settings, from_beginning=True) as fleet_subscriber,
        ):
            warnings, fleet = aiter(warning_subscriber), aiter(fleet_subscriber)
            await make_the_tool_fail_for_everyone(publisher, "web_search", before)
            for n, loop in enumerate(loops):
                error = OUTAGE.format(f"{n:04x}c0ffee{n}")
                await publisher.publish(loop, "web_search", success=False, error_message=error)
            await publisher.flush()
            outage = FleetWarning.model_validate(
                await next_matching(fleet, lambda w: w.get("tool") == "web_search")
            )
            told = set()
            while told != set(loops):
                warning = await next_matching(
                    warnings, lambda w: w.kind == "tool_outage" and w.loop_id in loops
                )
                told.add(warning.loop_id)

            # a failure the outage covers is not counted: no action_failed for it (a
            # spin of another action after it is the barrier that says it was applied)
            for attempt, late in enumerate(lates):
                error = OUTAGE.format(f"{attempt:04x}beef")
                failure = await publisher.publish(
                    late, "web_search", success=False, error_message=error
                )
                for _ in range(3):
                    await publisher.publish(late, "read_file", params={"path": "a.py"})
                await publisher.flush()
                kinds: list[str] = []
                # the monitor's spin warning says the failure was applied; the fleet's
                # tool_outage warning for it comes from another agent, in any order; a
                # failure still counted (the worker's board had not read the outage
                # notice yet: it waits up to half a second per fetch) gets none
                while "action_type_spin" not in kinds or not {
                    "failure:tool_outage",
                    "failure:action_failed",
                } & set(kinds):
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
    assert attempt < LATE_LOOPS and "failure:tool_outage" in kinds  # the late loop is told instead
