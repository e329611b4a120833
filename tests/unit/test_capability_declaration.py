"""A capability is declared once: the registries are derived from its declaration.

The walk a contributor takes to add a capability, done here with a toy one (a keyed
counter of actions per loop, warning nobody, with a re-route topic of its own): its
processor, its state declaration and one :class:`Capability` — and nothing else edited:
the worker declares its table and its agent reading its home and re-route topics, the
topic plan creates the re-route topic (co-partitioned) and the table's changelog, the
keyed-state kit runs it and delivers its re-routes. In the tree, the same walk touches
the capability's own modules (declaration, processor, wiring), its row in
``agents/capabilities.py`` and, to make its topic's name a setting, ``settings/topics.py``.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Any

import orjson

from loopwarden.agents.capabilities import CAPABILITIES, STATE_TABLES
from loopwarden.schemas.positions import Origin, default_partition
from loopwarden.settings import Role, Settings
from loopwarden.streams.runtime.capability import Capability, Register
from loopwarden.streams.runtime.keyed_runner import run_keyed
from loopwarden.streams.runtime.outputs import ROUTES, OutputName
from loopwarden.streams.runtime.resources import WorkerResources
from loopwarden.streams.runtime.state.harness import KeyedHarness
from loopwarden.streams.runtime.state.protocol import KeyedDeclaration, KeyedOutcome, KeyedRecord
from loopwarden.streams.runtime.state.reroute import Reroute
from loopwarden.streams.runtime.state.view import StateView
from loopwarden.streams.runtime.worker import assemble_worker_app
from loopwarden.streams.tools.topic_plan import (
    changelog_topics,
    copartitioned_topics,
    state_tables,
    topic_plan,
)

TOY_REROUTE = "toy.tallies-reroute"
"""The toy's own re-route topic (a real capability would name it in ``TopicSettings``)."""


@dataclass
class Tally:
    loop_id: str
    actions: int = 0
    seen: float = 0.0
    partition: int = 0

    def snapshot(self) -> bytes:
        return orjson.dumps([self.actions, self.seen, self.partition])

    @classmethod
    def restore(cls, key: str, data: bytes) -> Tally:
        actions, seen, partition = orjson.loads(data)
        return cls(key, actions, seen, partition)


TALLIES: KeyedDeclaration[Tally] = KeyedDeclaration(
    table="toy-tallies",
    help="Actions per loop.",
    home_topic=lambda t: t.actions,
    reroute_topic=lambda t: TOY_REROUTE,
    restore=Tally.restore,
    peek_expiry=lambda data: (orjson.loads(data)[2], orjson.loads(data)[1]),
    seen_at=lambda tally: tally.seen or None,
    fresh=lambda key, idle: Tally(key),
    idle_ttl_s=lambda s: s.limits.idle_loop_ttl_s,
    ttl_setting="limits.idle_loop_ttl_s",
    noun="tally(ies)",
)


@dataclass(slots=True)
class TallyOutcome(KeyedOutcome[Tally]):
    pass


@dataclass
class TallyProcessor:
    partitions: int = 0
    """The home topic's partitions: a loop's event read on another is re-routed."""

    @classmethod
    def for_settings(cls, settings: Settings, partitions: int = 0) -> TallyProcessor:
        return cls(partitions)

    def process(self, record: KeyedRecord, view: StateView[Tally]) -> TallyOutcome:
        outcome = TallyOutcome(states=view.changed)
        event = orjson.loads(record.value)
        source = record.source
        loop = event["loop_id"].encode()
        if record.origin is None and self.partitions:
            home = default_partition(loop, self.partitions)
            if home != source.partition:
                at = Origin(source.partition, source.offset, 0)
                outcome.reroutes.append(Reroute(home, loop, record.value, at))
                return outcome
        tally = view.current(event["loop_id"], event["occurred_at"])
        tally.actions += 1
        tally.seen = event["occurred_at"]
        outcome.states[event["loop_id"]] = tally
        outcome.events = 1
        return outcome


def register_tallies(app: Any, resources: Any, capability: Capability) -> Any:
    processor = TallyProcessor.for_settings(app.loopwarden)
    return run_keyed(app, capability, TALLIES, processor).agent


def _tallies() -> Register:
    return register_tallies


TOY = Capability(
    role="monitor",
    agent="count_actions",
    outputs=("warnings",),
    wiring=_tallies,
    bundled=True,
    state=TALLIES,
)


def test_a_toy_capability_declared_once_runs_on_a_worker_and_in_the_plan():
    settings = Settings()
    app = assemble_worker_app(settings, [TOY], WorkerResources(settings))
    assert {name.rsplit(".", 1)[-1] for name in app.agents} == {"count_actions"}
    assert list(app.tables) == ["toy-tallies"]  # the worker's ensure_topics reads these
    assert TOY.inputs(settings.topics) == (settings.topics.actions, TOY_REROUTE)
    (agent,) = app.agents.values()
    assert set(agent.channel.topics) == {settings.topics.actions, TOY_REROUTE}
    changelog = f"{settings.app_id}-toy-tallies-changelog"
    assert changelog_topics(settings, state_tables([TOY])) == [changelog]
    assert copartitioned_topics(settings, [TOY]) == [
        settings.topics.actions,
        TOY_REROUTE,
        changelog,
    ]
    planned = {spec.name: spec for spec in topic_plan(settings, [TOY])}
    assert planned[changelog].configs["cleanup.policy"] == "compact"
    assert planned[TOY_REROUTE].partitions == settings.topics.partitions
    assert TOY_REROUTE not in {spec.name for spec in topic_plan(settings, CAPABILITIES)}


def test_the_toy_capability_runs_on_the_kit_in_memory():
    kit = KeyedHarness(TALLIES, TallyProcessor())
    for n in range(3):
        kit.feed(orjson.dumps({"loop_id": "L", "occurred_at": 10.0 + n}))
    assert Tally.restore("L", kit.table[b"L"]).actions == 3


def test_the_toys_reroute_topic_brings_an_event_to_its_loops_partition():
    kit = KeyedHarness(TALLIES, TallyProcessor(partitions=4))
    home = default_partition(b"L", 4)
    kit.feed(orjson.dumps({"loop_id": "L", "occurred_at": 10.0}), b"L", (home + 1) % 4)
    (moved,) = kit.reroutes
    assert moved.partition == home and kit.offsets[(TOY_REROUTE, home)] == 1
    tally = Tally.restore("L", kit.table[b"L"])
    assert tally.actions == 1 and tally.partition == home


def test_every_role_and_output_name_is_declared_once_and_used():
    roles = {c.role for c in CAPABILITIES}
    assert roles == set(typing.get_args(Role))  # a role no capability runs is an error
    assert set(typing.get_args(OutputName)) == set(ROUTES)
    produced = {name for c in CAPABILITIES for name in c.outputs}
    assert produced == set(ROUTES) - {"memory_writes"}  # clients write memories


def test_state_tables_come_from_the_declarations_each_once():
    declared = [c.state.table for c in CAPABILITIES if c.state is not None]
    assert list(STATE_TABLES) == declared and len(set(declared)) == len(declared) == 4


def test_every_loader_imports_what_it_names():
    settings = Settings()
    for capability in CAPABILITIES:
        assert callable(capability.wiring())
        if capability.replay is not None:
            processor = capability.replay.build(settings)
            assert callable(processor.process)
            if capability.replay.settle is not None:
                assert callable(capability.replay.settle())
