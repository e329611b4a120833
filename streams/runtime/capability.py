"""How a capability is declared: its role, Faust agent, topics and named outputs, how
it is wired and how it is replayed.

A capability is a pure processor (decoded records and state in, one outcome with
*named* outputs out) plus a thin wiring function that hands it to the one generic
agent runner (:func:`~loopwarden.streams.runtime.capability_runner.run_capability`).
The declarations are plain data: the wiring and the processors are named by import
path and loaded when used, so reading them costs no Faust and no LanceDB. The runtime
knows capabilities only through these declarations; which ones exist is the
composition root's business (:data:`loopwarden.agents.capabilities.CAPABILITIES`).
"""

from __future__ import annotations

import pkgutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from loopwarden.settings import Settings, TopicSettings


def _always(settings: Settings) -> bool:
    return True


class ReplaySettle(Protocol):
    """A capability's settle step as a replay runs it: side-effect free, it gives the
    named outputs of a record's outcomes (e.g. the advice a task start got, matched
    against the store as the recorded advice says it was)."""

    skipped: dict[str, str]
    """Output id → why the replay could not reproduce it (the audit sets those aside)."""

    def __call__(self, outcomes: Sequence[Any]) -> Iterator[tuple[str, Any]]: ...


@dataclass(frozen=True, slots=True)
class Replay:
    """How ``loopwarden replay``/``audit`` re-runs a capability from its input topic."""

    input: str
    """The name ``--input`` uses for its topic (``actions``, ``completions``)."""
    keyed_by: Literal["loop", "family", "root"]
    """A loop's records are found by its loop id, its family id (a loop and its reruns)
    or its family of delegated loops (the root loop id)."""
    processor: str
    """Import path of the processor class (built by its ``for_settings``)."""
    audited: tuple[str, ...]
    """The named outputs an audit reproduces and compares with the recorded ones."""
    settle: str | None = None
    """Import path of ``(settings, recorded) -> ReplaySettle`` for a capability whose
    outputs come from settling outcomes against a store: ``recorded`` maps a trigger
    event id to the output the workers recorded for it."""

    def build(self, settings: Settings) -> Any:
        """The processor the worker runs, for ``settings``."""
        return pkgutil.resolve_name(self.processor).for_settings(settings)

    def build_settle(
        self, settings: Settings, recorded: Mapping[str, dict[str, Any]]
    ) -> ReplaySettle | None:
        """The replay's settle step (None: the processor's outputs are the outputs)."""
        if self.settle is None:
            return None
        settle: ReplaySettle = pkgutil.resolve_name(self.settle)(settings, recorded)
        return settle


@dataclass(frozen=True, slots=True)
class Capability:
    """One thing a worker does: a role, its Faust agent, its topics and named outputs."""

    role: str
    """The ``settings.roles`` entry that turns it on."""
    agent: str
    """Its Faust agent's name (and its runner's, its metrics' ``loopwarden.agent``)."""
    inputs: Callable[[TopicSettings], tuple[str, ...]]
    """The topics it reads, read as one stream (none: it is fed over HTTP)."""
    outputs: tuple[str, ...]
    """The named outputs it produces (see ``streams.runtime.outputs.ROUTES``)."""
    wiring: str
    """Import path of ``register(app, resources, capability)``, which builds the
    processor and its state and hands them to the generic runner."""
    bundled: bool = False
    """Its input is consumed as bundles of a partition's records."""
    enabled: Callable[[Settings], bool] = _always
    """Besides its role: whether these settings run it."""
    replay: Replay | None = None

    def runs_in(self, settings: Settings) -> bool:
        """True when a worker with ``settings`` runs this capability."""
        return self.role in settings.roles and self.enabled(settings)

    def wire(self, app: Any, resources: Any) -> Any:
        """Declare the capability's agent (and what it needs) on the Faust ``app``: its
        wiring is called with the app, the worker's shared resources and this
        declaration."""
        return pkgutil.resolve_name(self.wiring)(app, resources, self)
