"""The worker's metrics: OpenTelemetry instruments, plain totals, consumer lag.

One :class:`WorkerMetrics` per worker, fed by the runner (events, processing
time), the warning path (warnings by kind and level, publish→warning latency),
dead letters (by reason) and the memory writer (rows). The instruments go to
every configured reader (the Prometheus endpoint, an OTLP or console push); the
plain :class:`Totals` feed the periodic log line and the loop-health page.

Consumer lag is observed on collection, per assigned input partition, as the
end of the partition minus the committed offset. The end is the largest of the
fetched high watermark, the next offset after the last record read and the
committed offset: Tansu under-reports end offsets (``kafka-consumer-groups``
shows negative lag there), a read record proves the partition reaches at least
that far.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.metrics import CallbackOptions, Meter, Observation

from loopwarden.streams.runtime.telemetry.sensor import is_input_topic
from loopwarden.streams.runtime.workarounds import committed_offset

# seconds, from half a millisecond to ten seconds
LATENCY_BUCKETS = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
)  # fmt: skip


@dataclass
class Totals:
    """Running counts since the worker started (the summary line and the page read them)."""

    events: Counter[str] = field(default_factory=Counter)
    """By agent."""
    warnings: Counter[tuple[str, str]] = field(default_factory=Counter)
    """By (kind, level)."""
    dead_letters: Counter[str] = field(default_factory=Counter)
    """By reason."""
    fleet_warnings: Counter[tuple[str, str]] = field(default_factory=Counter)
    """By (kind, step): findings about a whole family of loops."""
    memory_rows: int = 0
    duplicates: int = 0
    """Events skipped because their id was already applied in their loop."""
    paused: dict[str, int] = field(default_factory=dict)
    """By agent: 1 while it is paused on a record (its storage or output away)."""

    def sums(self) -> tuple[int, int, int]:
        """(events, warnings, dead letters) of every agent, kind and reason."""
        return (
            sum(self.events.values()),
            sum(self.warnings.values()),
            sum(self.dead_letters.values()),
        )


class WorkerMetrics:
    """Counters and histograms of one worker (see the module doc)."""

    def __init__(self, meter: Meter, partitions: Any = None) -> None:
        self.totals = Totals()
        # counters observe the totals when a reader collects: nothing per event or
        # warning but a dict increment (an OpenTelemetry Counter.add per warning was
        # about 5 % of the action monitor's handling, in a py-spy profile)
        totals = self.totals
        counters = (
            ("loopwarden.events", "{event}", "Events processed, by agent.",
             _observing(totals.events, ("loopwarden.agent",))),
            ("loopwarden.warnings", "{warning}", "Warnings sent, by kind and level.",
             _observing(totals.warnings, ("loopwarden.warning.kind", "loopwarden.warning.level"))),
            ("loopwarden.dead_letters", "{record}",
             "Records or events sent to the dead-letter topic, by reason.",
             _observing(totals.dead_letters, ("loopwarden.dead_letter.reason",))),
            ("loopwarden.fleet.warnings", "{warning}",
             "Fleet warnings (findings about a family of delegated loops), by kind and step.",
             _observing(totals.fleet_warnings, ("loopwarden.warning.kind", "loopwarden.step"))),
            ("loopwarden.memory.rows_written", "{row}", "Memory rows written to LanceDB.",
             lambda _options: [Observation(totals.memory_rows)]),
            ("loopwarden.events.duplicates", "{event}",
             "Events skipped because their id was already applied in their loop.",
             lambda _options: [Observation(totals.duplicates)]),
        )  # fmt: skip
        for name, unit, description, callback in counters:
            meter.create_observable_counter(
                name, callbacks=[callback], unit=unit, description=description
            )
        meter.create_observable_gauge(
            "loopwarden.agent.paused",
            callbacks=[_observing(totals.paused, ("loopwarden.agent",))],
            unit="1",
            description="1 while an agent is paused on a record because its storage or its "
            "output is away (it retries until they are back), else 0.",
        )
        self._processing = meter.create_histogram(
            "loopwarden.processing.duration",
            unit="s",
            description="Time to process one consumed message (a record, or a bundle of "
            "records), by agent.",
            explicit_bucket_boundaries_advisory=LATENCY_BUCKETS,
        )
        self._latency = meter.create_histogram(
            "loopwarden.warning.latency",
            unit="s",
            description="From the event's published_at to its warning being queued for "
            "sending, by kind.",
            explicit_bucket_boundaries_advisory=LATENCY_BUCKETS,
        )
        if partitions is not None:
            meter.create_observable_gauge(
                "loopwarden.consumer.lag",
                callbacks=[partitions],
                unit="{record}",
                description="Records of an input partition not yet committed by this worker.",
            )

    def events(self, agent: str, count: int = 1) -> None:
        """``count`` events processed by ``agent``."""
        self.totals.events[agent] += count

    def processed(self, agent: str, seconds: float) -> None:
        """One consumed message (a record or a bundle) took ``seconds`` to process."""
        self._processing.record(seconds, {"loopwarden.agent": agent})

    def warning(self, kind: str, level: str) -> None:
        """A warning of ``kind`` at ``level`` was sent."""
        self.totals.warnings[kind, level] += 1

    def fleet_warning(self, kind: str, step: str) -> None:
        """A fleet warning of ``kind`` at ladder ``step`` was sent."""
        self.totals.fleet_warnings[kind, step] += 1

    def warning_latency(self, kind: str, seconds: float) -> None:
        """Publish→warning time of one warning."""
        self._latency.record(seconds, {"loopwarden.warning.kind": kind})

    def dead_letter(self, reason: str) -> None:
        """One record or event dead-lettered for ``reason``."""
        self.totals.dead_letters[reason] += 1

    def duplicate(self) -> None:
        """One event skipped: its id was already applied in its loop."""
        self.totals.duplicates += 1

    def paused(self, agent: str, paused: bool) -> None:
        """``agent`` paused on a record (True), or resumed (False)."""
        self.totals.paused[agent] = int(paused)

    def memory_rows(self, count: int) -> None:
        """``count`` memory rows written."""
        self.totals.memory_rows += count


def _observing(counts: Mapping[Any, int], names: tuple[str, ...]) -> Any:
    """An observable counter's callback: each total of ``counts`` with its key as the
    attributes ``names`` (a tuple key, or one value for one name)."""

    def observe(_options: CallbackOptions) -> list[Observation]:
        observed = []
        for key, total in list(counts.items()):
            values = key if isinstance(key, tuple) else (key,)
            observed.append(Observation(total, dict(zip(names, values, strict=True))))
        return observed

    return observe


@dataclass(frozen=True, slots=True)
class PartitionLag:
    """One input partition's lag."""

    topic: str
    partition: int
    end: int
    committed: int

    @property
    def lag(self) -> int:
        """Records not yet committed."""
        return max(0, self.end - self.committed)


def partition_lags(app: Any) -> list[PartitionLag]:
    """The lag of each input partition assigned to ``app``'s consumer (changelogs aside)."""
    try:
        consumer = app.consumer
        assignment = sorted(consumer.assignment())
    except Exception:  # not started, or mid-rebalance
        return []
    lags = []
    for tp in assignment:
        if not is_input_topic(tp.topic):
            continue
        # Faust's committed offset is the next one to read. Its read offset is the last
        # record read, except after a seek (every rebalance), when it is the next one to
        # read as well: counting it as read + 1 showed a phantom lag of 1 on every idle
        # partition after a rebalance. The end is the broker's high-water mark.
        committed = committed_offset(consumer, tp) or 0
        try:
            highwater = consumer.highwater(tp) or 0
        except Exception:
            highwater = 0
        lags.append(PartitionLag(tp.topic, tp.partition, max(highwater, committed), committed))
    return lags


class LagObserver:
    """The consumer-lag gauge's callback: one observation per input partition."""

    def __init__(self, app: Any) -> None:
        self.app = app

    def __call__(self, options: CallbackOptions) -> Iterable[Observation]:
        return list(self._observations())

    def _observations(self) -> Iterator[Observation]:
        for lag in partition_lags(self.app):
            yield Observation(
                lag.lag,
                {
                    "messaging.destination.name": lag.topic,
                    "messaging.destination.partition.id": str(lag.partition),
                },
            )
