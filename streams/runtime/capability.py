"""How a capability is declared, once: its role, Faust agent, topics, named outputs,
keyed state, wiring and replay.

A capability is a pure processor (decoded records and state in, one outcome with
*named* outputs out) plus a thin wiring function that hands it to the one generic
agent runner (:func:`~loopwarden.streams.runtime.capability_runner.run_capability`),
or, keeping state per key, to the keyed-state kit
(:func:`~loopwarden.streams.runtime.keyed_runner.run_keyed`). Everything else is derived
from the declarations: the state tables whose changelogs are planned and created, the
roles a worker can run, the topics a replay reads. Its parts are typed (a role is a
:data:`~loopwarden.settings.Role`, an output an
:data:`~loopwarden.streams.runtime.outputs.OutputName`), and the wiring and the
processors are *loaders*, functions that import them when called, so reading the
declarations costs no Faust and no LanceDB and the type checker still follows every
import. The runtime knows capabilities only through these declarations; which ones
exist is the composition root's business (:data:`loopwarden.agents.capabilities.CAPABILITIES`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from loopwarden.schemas.dead_letter import DeadLetter
from loopwarden.settings import Role, Settings, TopicSettings
from loopwarden.streams.runtime.outputs import OutputName
from loopwarden.streams.runtime.state.protocol import KeyedDeclaration

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

    from loopwarden.streams.runtime.records import Record
    from loopwarden.streams.runtime.resources import WorkerResources


def _always(settings: Settings) -> bool:
    return True


class ReplaySettle(Protocol):
    """A capability's settle step as a replay runs it: side-effect free, it gives the
    named outputs of a record's outcomes (e.g. the advice a task start got, matched
    against the store as the recorded advice says it was)."""

    skipped: dict[str, str]
    """Output id → why the replay could not reproduce it (the audit sets those aside)."""

    def __call__(self, outcomes: Sequence[Any]) -> Iterator[tuple[str, Any]]: ...


SettleFactory = Callable[[Settings, Mapping[str, dict[str, Any]]], ReplaySettle]
Register = Callable[[Any, Any, "Capability"], Any]
"""``register(app, resources, capability)``: declares the capability on a Faust app."""


@dataclass(frozen=True, slots=True)
class Replay:
    """How ``loopwarden replay``/``audit`` re-runs a capability from its input topic."""

    input: str
    """The name ``--input`` uses for its topic (``actions``, ``completions``)."""
    keyed_by: Literal["loop", "family", "root"]
    """A loop's records are found by its loop id, its family id (a loop and its reruns)
    or its family of delegated loops (the root loop id)."""
    processor: Callable[[], Callable[[Settings, int], Any]]
    """Loads the processor's factory (its class's ``for_settings``)."""
    audited: tuple[OutputName, ...]
    """The named outputs an audit reproduces and compares with the recorded ones."""
    settle: Callable[[], SettleFactory] | None = None
    """Loads ``(settings, recorded) -> ReplaySettle`` for a capability whose outputs come
    from settling outcomes against a store: ``recorded`` maps a trigger event id to the
    output the workers recorded for it."""

    def build(self, settings: Settings, partitions: int = 0) -> Any:
        """The processor the worker runs, for ``settings`` (``partitions``: the home
        topic's, for a processor that re-routes records read on the wrong partition)."""
        return self.processor()(settings, partitions)

    def build_settle(
        self, settings: Settings, recorded: Mapping[str, dict[str, Any]]
    ) -> ReplaySettle | None:
        """The replay's settle step (None: the processor's outputs are the outputs)."""
        if self.settle is None:
            return None
        return self.settle()(settings, recorded)


@dataclass(frozen=True, slots=True)
class Batches:
    """Hand the handler lists of records: at most ``max_records`` (or ``max_bytes`` of
    values) or what arrived within ``within_s``; ``commit``: each batch's offsets are
    committed once it is processed."""

    max_records: int
    within_s: float
    max_bytes: int | None = None
    commit: bool = False


class BatchOutcome(Protocol):
    """What a batch step made of a batch: the records it could not read, and its named
    outputs."""

    @property
    def dead_letters(self) -> Sequence[DeadLetter]: ...

    def outputs(self) -> Iterable[tuple[str, Any]]: ...


class BatchStep(Protocol):
    """A capability's processing of one batch of records, without Faust: what its agent
    runs in a thread, and what :class:`~loopwarden.streams.runtime.in_memory.InMemoryWorker`
    runs in line. A transient failure (its store away) is raised, for the runner to
    pause and retry the batch."""

    def __call__(self, records: list[Record]) -> BatchOutcome: ...


BatchStepFactory = Callable[[Settings, "WorkerResources", "Tracer | None"], BatchStep]
"""``(settings, resources, tracer) -> step``."""


@dataclass(frozen=True, slots=True)
class BatchProcessing:
    """A capability that takes its records in batches and keeps no keyed state (memory
    writes: the store is its state)."""

    step: Callable[[], BatchStepFactory]
    """Loads ``(settings, resources, tracer) -> step``: the step the worker's agent runs
    (``tracer``: the worker's, for the spans of what the step calls; None: none)."""
    sizes: Callable[[Settings], Batches]
    """Its batches' bounds for ``settings``."""

    def build(
        self, settings: Settings, resources: WorkerResources, tracer: Tracer | None = None
    ) -> BatchStep:
        """The batch step for ``settings``, over the worker's shared ``resources``."""
        return self.step()(settings, resources, tracer)


@dataclass(frozen=True, slots=True)
class Capability:
    """One thing a worker does: a role, its Faust agent, its topics and named outputs."""

    role: Role
    """The ``settings.roles`` entry that turns it on."""
    agent: str
    """Its Faust agent's name (and its runner's, its metrics' ``loopwarden.agent``)."""
    outputs: tuple[OutputName, ...]
    """The named outputs it produces (see ``streams.runtime.outputs.ROUTES``)."""
    wiring: Callable[[], Register]
    """Loads ``register(app, resources, capability)``, which builds the processor and
    its state and hands them to the generic runner (or the keyed-state kit)."""
    input_topics: Callable[[TopicSettings], tuple[str, ...]] | None = None
    """The topics it reads, read as one stream; by default a keyed capability's state's
    home and re-route topics, else none (it is fed over HTTP). See :meth:`inputs`."""
    bundled: bool = False
    """Its input is consumed as bundles of a partition's records."""
    enabled: Callable[[Settings], bool] = _always
    """Besides its role: whether these settings run it."""
    replay: Replay | None = None
    state: KeyedDeclaration[Any] | None = None
    """Its keyed state (a table per capability): the table's changelog is planned and
    created from here."""
    batches: BatchProcessing | None = None
    """How it processes a batch of records, Faust-free (its wiring runs that step; the
    in-memory worker does too)."""
    answers: bool = False
    """It answers every action event it applies or skips with a verdict (the warnings it
    sent about it, maybe none: :mod:`~loopwarden.streams.runtime.verdicts`), so that a
    guard's wait before the next model call ends when the worker is done with the event."""

    def inputs(self, topics: TopicSettings) -> tuple[str, ...]:
        """The topics it reads (``input_topics``, else its keyed state's home and
        re-route topics, else none); the first is its home topic."""
        if self.input_topics is not None:
            return self.input_topics(topics)
        if self.state is not None:
            return (self.state.home_topic(topics), self.state.reroute_topic(topics))
        return ()

    def runs_in(self, settings: Settings) -> bool:
        """True when a worker with ``settings`` runs this capability."""
        return self.role in settings.roles and self.enabled(settings)

    def wire(self, app: Any, resources: Any) -> Any:
        """Declare the capability's agent (and what it needs) on the Faust ``app``: its
        wiring is called with the app, the worker's shared resources and this
        declaration."""
        return self.wiring()(app, resources, self)
