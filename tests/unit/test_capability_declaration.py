"""A capability is declared once: the registries are derived from its declaration.

The walk a contributor takes to add a capability, done here with a toy one (a keyed
counter of actions per loop, warning nobody): its processor, its state declaration and
one :class:`Capability` — and nothing else edited: the worker declares its table and
agent, the topic plan creates its table's changelog, the keyed-state kit runs it.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Any

import orjson

from loopwarden.agents.capabilities import CAPABILITIES, STATE_TABLES
from loopwarden.settings import Role, Settings
from loopwarden.streams.runtime.capability import Capability, Register
from loopwarden.streams.runtime.keyed_runner import run_keyed
from loopwarden.streams.runtime.outputs import ROUTES, OutputName
from loopwarden.streams.runtime.resources import WorkerResources
from loopwarden.streams.runtime.state.harness import KeyedHarness
from loopwarden.streams.runtime.state.protocol import KeyedDeclaration, KeyedOutcome, KeyedRecord
from loopwarden.streams.runtime.state.view import StateView
from loopwarden.streams.runtime.worker import assemble_worker_app
from loopwarden.streams.tools.topic_plan import changelog_topics, topic_plan


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
    reroute_topic=lambda t: t.actions_reroute,
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
    @classmethod
    def for_settings(cls, settings: Settings) -> TallyProcessor:
        return cls()

    def process(self, record: KeyedRecord, view: StateView[Tally]) -> TallyOutcome:
        outcome = TallyOutcome(states=view.changed)
        event = orjson.loads(record.value)
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
    inputs=lambda t: (t.actions, t.actions_reroute),
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
    tables = [c.state.table for c in [TOY] if c.state is not None]
    changelog = f"{settings.app_id}-toy-tallies-changelog"
    assert changelog_topics(settings, tables) == [changelog]
    planned = {spec.name: spec for spec in topic_plan(settings, tables)}
    assert planned[changelog].configs["cleanup.policy"] == "compact"


def test_the_toy_capability_runs_on_the_kit_in_memory():
    kit = KeyedHarness(TALLIES, TallyProcessor())
    for n in range(3):
        kit.feed(orjson.dumps({"loop_id": "L", "occurred_at": 10.0 + n}))
    assert Tally.restore("L", kit.table[b"L"]).actions == 3


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
