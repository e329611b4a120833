"""Kafka topic names and layout (``LOOPWARDEN_TOPICS__*``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


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
    partitions: int = Field(8, ge=1)
    lessons_partitions: int = Field(
        1,
        ge=1,
        description="Partitions of memory_lessons. One by default: lessons are few (one "
        "per failed action), they go to one LanceDB table whatever the number of workers, "
        "and every partition a worker reads is in each of its fetches, busy or idle (eight "
        "more took an idle worker from 0.9-1.0 to 1.0-1.1 % of a core).",
    )
    replication_factor: int = Field(1, ge=1)

    def partitions_of(self, topic: str) -> int:
        """The partition count ``topic`` is created with."""
        return self.lessons_partitions if topic == self.memory_lessons else self.partitions
