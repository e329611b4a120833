"""Kafka topic names and layout (``LOOPWARDEN_TOPICS__*``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


class TopicSettings(BaseModel):
    """Kafka topic names and layout."""

    model_config = ConfigDict(frozen=True)

    actions: str = "loopwarden.actions"
    warnings: str = "loopwarden.warnings"
    reflection_requests: str = "loopwarden.reflection-requests"
    loop_completions: str = "loopwarden.loop-completions"
    reflections: str = "loopwarden.reflections"
    memory_writes: str = "loopwarden.memory-writes"
    memory_lessons: str = Field(
        "loopwarden.memory-lessons",
        description="The monitor's lessons (a memory of each failed or task-ending action), "
        "stored by the memory role in batches of up to "
        "memory.lessons_within_s; clients' own writes go to memory_writes.",
    )
    memory_outcomes: str = "loopwarden.memory-outcomes"
    decisions: str = "loopwarden.decisions"
    dead_letter: str = "loopwarden.dead-letter"
    advice: str = Field(
        "loopwarden.advice",
        description="Experience advice answering task-start events, keyed by loop id.",
    )
    otlp_spans: str = Field(
        "otlp_spans",
        description="Spans written by the OpenTelemetry Collector's Kafka exporter (its "
        "default topic), read by the otlp role.",
    )
    actions_reroute: str = Field(
        "loopwarden.actions-reroute",
        description="Actions that arrived on another partition than their loop id's (a "
        "producer not using murmur2, or no key) are re-routed here to their loop's partition.",
    )
    completions_reroute: str = Field(
        "loopwarden.loop-completions-reroute",
        description="The same for loop completions (keyed by family).",
    )
    fleet_reroute: str = Field(
        "loopwarden.fleet-reroute",
        description="Actions of delegated loops, re-routed to the partition of their "
        "family's root loop (the fleet role keeps a family's state in one place).",
    )
    fleet_warnings: str = Field(
        "loopwarden.fleet-warnings",
        description="Warnings about a whole family or the fleet, keyed by the family's root "
        "loop id (each loop's own warnings go to the warnings topic too).",
    )
    tool_outages: str = Field(
        "loopwarden.tool-outages",
        description="Tool outage notices (keyed by tool), which every monitor follows: a "
        "failure an outage covers is not counted against the agent.",
    )
    verdicts: str = Field(
        "loopwarden.verdicts",
        description="Every action event's verdict (how many warnings each answering role "
        "sent about it, maybe none), keyed by loop id: what the guards end their wait on.",
    )
    partitions: int = Field(8, ge=1)
    lessons_partitions: int = Field(
        1,
        ge=1,
        description="Partitions of memory_lessons. One by default: lessons are few (one "
        "per failed action), they go to one LanceDB table whatever the number of workers, "
        "and every partition a worker reads is in each of its fetches, busy or idle (eight "
        "more took an idle worker from 0.9-1.0 to 1.0-1.1 % of a core).",
    )
    replication_factor: int = Field(
        1,
        ge=1,
        description="Replicas of every topic loopwarden creates. 1 for the embedded broker "
        "and a one-node Kafka; 3 on a production cluster (with min_insync_replicas 2 and "
        "the clients' acks=all, an acknowledged event survives the loss of any one broker).",
    )
    min_insync_replicas: int | None = Field(
        None,
        ge=1,
        description="min.insync.replicas of every topic created; unset: replication_factor "
        "- 1, at least 1 and at most 2 (1, 1, 2, 2, ... for 1, 2, 3, 4, ... replicas).",
    )
    retention_ms: int = Field(
        604_800_000,
        ge=-1,
        description="retention.ms of the event topics (actions, warnings, decisions, ...): "
        "7 days, the audit replay's window; -1 keeps them for ever.",
    )
    memory_retention_ms: int = Field(
        -1,
        ge=-1,
        description="retention.ms of memory_writes and memory_lessons: -1, for ever. They "
        "are the record a LanceDB store is rebuilt from (`loopwarden memory rebuild`); not "
        "compacted, since writes keyed by scope share a key (docs/operations.md).",
    )
    verdicts_retention_ms: int = Field(
        3_600_000,
        ge=1,
        description="retention.ms of the verdicts topic: an hour (a verdict matters for "
        "the milliseconds a guard waits; the warnings topic is the record).",
    )
    changelog_segment_ms: int | None = Field(
        None,
        ge=1,
        description="segment.ms of the table changelogs (compacted); unset: the broker's "
        "(7 days). The cleaner compacts closed segments only: a smaller value lets a "
        "restore read less sooner, at the cost of more files.",
    )

    @model_validator(mode="after")
    def _insync_within_replicas(self) -> TopicSettings:
        if (
            self.min_insync_replicas is not None
            and self.min_insync_replicas > self.replication_factor
        ):
            raise ValueError(
                f"topics.min_insync_replicas ({self.min_insync_replicas}) is more than "
                f"topics.replication_factor ({self.replication_factor}): no write could succeed"
            )
        return self

    def min_insync(self) -> int:
        """The min.insync.replicas topics are created with."""
        if self.min_insync_replicas is not None:
            return self.min_insync_replicas
        return max(1, min(2, self.replication_factor - 1))

    def partitions_of(self, topic: str) -> int:
        """The partition count ``topic`` is created with."""
        return self.lessons_partitions if topic == self.memory_lessons else self.partitions
