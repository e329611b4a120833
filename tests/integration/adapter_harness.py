"""Shared by the adapter tests: a worker with the laddered profile, and a barrier.

The scripted models stand in for an LLM's latency with the guard's own
synchronisation (:meth:`WarningInbox.wait`): a model call waits for the worker's
verdict on the calls before it, so "the next request carries the warning" is
deterministic whatever the load.
"""

from __future__ import annotations

import itertools

from loopwarden.adapters.guard import LoopGuard
from loopwarden.agents.monitor.declaration import LOOP_STATES
from loopwarden.settings import Settings
from loopwarden.streams.client.publisher import default_partition
from loopwarden.streams.runtime.state.offline import OfflineStates

from .conftest import isolated_settings

WARN_AT = 4
"""Identical call + identical result: the 4th in a row is the first finding (the
patterns profile's ``repeat_result_count``)."""
STOP_AT = WARN_AT + 6
"""The ladder's stop is its 7th finding: the 10th identical call."""
VERDICT_WAIT_S = 30.0
"""The adapters' bounded wait for a verdict where the tests expect one: it ends when
the verdict arrives, and is generous so a loaded machine cannot make it one call late
(5 s was not: beside two busy loops a delegated run's verdict came later and the
pydantic-ai circle ran two planner requests too many, 2026-12-07)."""


def verdict_wait_after(call: int) -> float:
    """The guard's bound for the wait after the ``call``-th identical call: generous
    after the calls that bring the first warning and the stop, none after the others
    (nothing to wait for before the first finding; between, nothing checked)."""
    return VERDICT_WAIT_S if call in (WARN_AT, STOP_AT) else 0.0


def laddered_settings(broker, name: str) -> Settings:
    """Isolated settings whose worker runs the ``patterns`` profile (warn → … → stop), with
    the roles the adapters talk to: warnings and stops (monitor, guardrails), families
    (fleet) and Claude Code's hooks; memory and experience, which no adapter test reads,
    would embed every failed call."""
    settings = isolated_settings(broker, name, ["monitor", "guardrails", "fleet", "hooks"])
    detection = settings.detection.model_copy(update={"profile": "patterns"})
    return settings.model_copy(update={"detection": detection})


def neighbour_loop(loop_id: str, partitions: int) -> str:
    """Another loop id on the same partition (of the actions and the warnings topics)."""
    home = default_partition(loop_id.encode(), partitions)
    for n in itertools.count():
        candidate = f"{loop_id}-barrier-{n}"
        if default_partition(candidate.encode(), partitions) == home:
            return candidate
    raise AssertionError("unreachable")


def assert_no_warning_for(guard: LoopGuard, loop_id: str, settings: Settings) -> None:
    """Publish a spin on a neighbour loop and wait for its warning: the worker has then
    processed every earlier record of ``loop_id``'s partition, and written their warnings
    before this one on the same warnings partition."""
    barrier = neighbour_loop(loop_id, settings.topics.partitions)
    for n in range(WARN_AT):
        guard.tool_call(barrier, "probe", {"n": 0}, result="same", tool_call_id=f"b{n}")
    assert guard.inbox.wait(barrier, count=1, timeout_s=60), "the barrier loop got no warning"
    assert guard.inbox.seen(loop_id) == 0, guard.take(loop_id)


def published_events(settings: Settings, loop_id: str, count: int) -> list[dict]:
    """The first ``count`` action events of ``loop_id`` on the actions topic, as sent."""
    import asyncio

    import orjson

    from loopwarden.streams.client.subscriber import TopicSubscriber

    def events_of(record) -> list[dict]:
        value = orjson.loads(record.value)
        return value if isinstance(value, list) else [value]

    async def read() -> list[dict]:
        subscriber = TopicSubscriber(
            settings.topics.actions, events_of, settings, from_beginning=True
        )
        found: list[dict] = []
        async with subscriber:
            async for batch in subscriber:
                found += [event for event in batch if event["loop_id"] == loop_id]
                if len(found) >= count:
                    return found

    return asyncio.run(asyncio.wait_for(read(), 60))


def loops_on_one_partition(prefix: str, count: int, partitions: int) -> list[str]:
    """``count`` loop ids that share one partition: a worker reads their events in the
    order they were published (events of several partitions interleave as they come)."""
    home = default_partition(f"{prefix}-0".encode(), partitions)
    found = []
    for n in itertools.count():
        candidate = f"{prefix}-{n}"
        if default_partition(candidate.encode(), partitions) == home:
            found.append(candidate)
            if len(found) == count:
                return found
    raise AssertionError("unreachable")


def read_topic(settings: Settings, topic: str, keep, count: int) -> list[dict]:
    """The first ``count`` JSON items of ``topic`` (from its beginning) that ``keep``
    accepts; a record may hold one item or a list of them."""
    import asyncio

    import orjson

    from loopwarden.streams.client.subscriber import TopicSubscriber

    async def read() -> list[dict]:
        subscriber = TopicSubscriber(
            topic, lambda r: orjson.loads(r.value), settings, from_beginning=True
        )
        found: list[dict] = []
        async with subscriber:
            async for value in subscriber:
                for item in value if isinstance(value, list) else [value]:
                    if keep(item):
                        found.append(item)
                if len(found) >= count:
                    return found

    return asyncio.run(asyncio.wait_for(read(), 90))


def delegation_cycle_warned_then_stopped(
    settings: Settings, root: str, first: str = "researcher", loops: int = 7
) -> tuple:
    """The family ``root``'s two fleet warnings, checked: a delegation cycle of a planner
    and a researcher handed one task, ``first`` the agent given it a 3rd time first
    (warned), the other agent next (stopped), the stop for all ``loops`` of the family.
    Returns (warned, stopped)."""
    from loopwarden.schemas.fleet import FleetWarning

    fleet = [
        FleetWarning.model_validate(w)
        for w in read_topic(
            settings, settings.topics.fleet_warnings, lambda w: w.get("root_loop_id") == root, 2
        )
    ]
    assert [(w.kind, w.step) for w in fleet] == [
        ("delegation_cycle", "warn"),
        ("delegation_cycle", "stop"),
    ]
    warned, stopped = fleet
    second = "planner" if first == "researcher" else "researcher"
    assert set(warned.agents) == {"planner", "researcher"}
    assert f"{first} was given the same task 3 times" in warned.reason, warned.reason
    assert f"{second} was given the same task 3 times" in stopped.reason, stopped.reason
    assert set(warned.loop_ids) < set(stopped.loop_ids) and len(stopped.loop_ids) == loops
    return warned, stopped


PERSON_SAYS = [
    "Hi, I want to cancel my flight booking.",
    "I don't have the reference with me. Can you look it up by my name, Ana Silva?",
    "I told you, I don't have it. Please just cancel it.",
]
"""A person who cannot give what the support agent keeps asking for."""
AGENT_SAYS = [
    "I can help you cancel your booking. Could you please give me your booking reference "
    "so I can find the reservation?",
    "I'm sorry, but I need your booking reference to find the reservation and cancel it. "
    "Could you please provide it?",
    "Unfortunately I cannot find or cancel the reservation without its booking reference. "
    "Please provide the booking reference.",
]
"""The agent's answers: the same request in other words, three times."""


def conversation_turns(events: list[dict]) -> list[tuple[str, str, str]]:
    """(action type, turn, text) of the published conversation turns, in order."""
    return [
        (p["action_type"], p["turn"], p["result"])
        for p in (event["payload"] for event in events)
        if p.get("turn") in ("message", "counterpart") and p["action_type"] != "loop_end"
    ]


def assert_published_conversation(events: list[dict]) -> None:
    """The person's turns as the counterpart's and the agent's as its message turns,
    interleaved as said; and the default detection, run over exactly these events,
    finds the agent restating itself at its third answer (the person's turns between
    do not break the streak)."""
    from loopwarden.agents.monitor.records import RecordProcessor
    from loopwarden.schemas import codec
    from loopwarden.schemas.dead_letter import SourcePosition

    expected = []
    for person, agent in zip(PERSON_SAYS, AGENT_SAYS, strict=True):
        expected += [("user", "counterpart", person), ("message", "message", agent)]
    assert conversation_turns(events) == expected
    processor = RecordProcessor.for_settings(Settings())
    states = OfflineStates.for_settings(LOOP_STATES, Settings())
    warned: list[tuple[str, str]] = []
    for offset, event in enumerate(events):
        source = SourcePosition("published", 0, offset)
        outcome = states.apply(processor, codec.dumps(event), None, source)
        warned += [(w["kind"], w["trigger_event_id"]) for w in outcome.warnings]
    third_answer = [e["event_id"] for e in events if e["payload"]["action_type"] == "message"][2]
    assert warned == [("restated_message", third_answer)], warned
