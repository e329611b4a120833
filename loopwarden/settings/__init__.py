"""One settings model for loopwarden, read from ``LOOPWARDEN_*`` environment variables.

Every threshold of the seed documents is a named field here with the seed's value as its
default. Nested groups use ``__`` in the variable name, e.g.
``LOOPWARDEN_DETECTION__SPIN_THRESHOLD=4`` or ``LOOPWARDEN_KAFKA__FETCH_MAX_WAIT_MS=5``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from loopwarden.schemas import codec
from loopwarden.settings.adapters import AdapterSettings as AdapterSettings
from loopwarden.settings.detection import DetectionSettings as DetectionSettings
from loopwarden.settings.detection import Language as Language
from loopwarden.settings.experience import ExperienceSettings as ExperienceSettings
from loopwarden.settings.fleet import FleetSettings as FleetSettings
from loopwarden.settings.gateway import GatewaySettings as GatewaySettings
from loopwarden.settings.ingest import IngestSettings as IngestSettings
from loopwarden.settings.kafka_security import KafkaSecurity as KafkaSecurity
from loopwarden.settings.memory import MemoryIndexSettings as MemoryIndexSettings
from loopwarden.settings.memory import MemorySettings
from loopwarden.settings.outputs import WebhookSettings as WebhookSettings
from loopwarden.settings.telemetry import TelemetrySettings
from loopwarden.settings.topics import TopicSettings as TopicSettings

Role = Literal["monitor", "guardrails", "fleet", "analyst", "memory", "experience", "hooks", "otlp"]


class GuardrailSettings(BaseModel):
    """Reflection guardrails (seed 003: RERUN_CONFIG and FATIGUE_CONFIG)."""

    model_config = ConfigDict(frozen=True)

    alignment_threshold: float = Field(
        0.75, ge=0, le=1, description="Minimum alignment score to finalize instead of rerun."
    )
    drift_threshold: float = Field(
        0.25, ge=0, le=1, description="Maximum drift score to finalize instead of rerun."
    )
    max_reruns: int = Field(3, ge=0, description="Reruns of one loop family (per-trace override).")
    max_reruns_ceiling: int = Field(
        50, ge=1, description="Largest per-trace max_reruns an event may ask for (bounds state)."
    )
    fatigue_threshold: float = Field(
        0.5, ge=0, le=1, description="RERUN_CONFIG's fatigue threshold (the decision uses it)."
    )
    bias_repetition_threshold: int = Field(
        3, ge=1, description="A bias tag flagged this many times is a bias echo: halt."
    )
    fatigue_base_increment: float = Field(
        0.15, ge=0, description="Fatigue added without improvement."
    )
    fatigue_improvement_threshold: float = Field(
        0.05, ge=0, description="Improvement in alignment or drift that counts as progress."
    )
    fatigue_decay_rate: float = Field(0.05, ge=0, description="Fatigue removed on improvement.")
    fatigue_critical_threshold: float = Field(
        0.5, ge=0, description="Fatigue at which finalization is forced."
    )
    max_fatigue: float = Field(1.0, gt=0, description="Upper clamp of the fatigue score.")


class ApiSettings(BaseModel):
    """The guardrails HTTP API served by the workers (seed 003 "API Endpoints")."""

    model_config = ConfigDict(frozen=True)

    token: SecretStr | None = Field(
        None, description="Bearer token required for overrides (LOOPWARDEN_API__TOKEN)."
    )
    overrides_enabled: bool = Field(
        True, description="Serve the override endpoint (needs a token to start)."
    )
    request_timeout_s: float = Field(
        10.0, gt=0, description="How long a request waits for the stream to process it."
    )
    protect_completions: bool = Field(
        True,
        description="With a token configured, completions (which can finalize or halt a "
        "family) need it too.",
    )
    protect_status: bool = Field(
        False, description="The (read-only, redacted) status needs the token too."
    )
    max_body_bytes: int = Field(
        64 * 1024, ge=1024, description="Larger request bodies are refused with 413."
    )


class AnalystSettings(BaseModel):
    """The reflection analyst: an OpenAI-compatible endpoint, or the heuristics."""

    model_config = ConfigDict(frozen=True)

    enabled: bool = Field(True, description="Run the analyst agent in the workers.")
    base_url: str | None = Field(
        None,
        description="OpenAI-compatible API base, e.g. http://127.0.0.1:8000/v1 (unset: "
        "deterministic analysis only).",
    )
    model: str = Field("gpt-4o-mini", description="Model name sent to the endpoint.")
    api_key: SecretStr | None = Field(None, description="Bearer key for the endpoint.")
    timeout_s: float = Field(10.0, gt=0, description="Per-request timeout; then fall back.")
    concurrency: int = Field(4, ge=1, description="Requests analysed at once per worker.")
    param_similarity_threshold: float = Field(
        0.9, ge=0, le=1, description="Heuristic: parameters this similar are 'near-identical'."
    )


class KafkaSettings(BaseModel):
    """Client tuning. Defaults suit the embedded broker and low-latency warnings."""

    model_config = ConfigDict(frozen=True)

    bootstrap_servers: str = "127.0.0.1:9092"
    fetch_max_wait_ms: int = Field(
        10, ge=0, description="Tansu parks a fetch for the full wait: keep it low."
    )
    idle_fetch_max_wait_ms: int = Field(
        500,
        ge=0,
        description="The worker's (and a client subscriber's) fetch wait grows to this "
        "(doubling) while its fetches come back empty, and drops to fetch_max_wait_ms as "
        "soon as records arrive: an idle worker polls twice a second, not 100 times (Kafka's "
        "own default; on Kafka a waiting fetch returns as soon as records arrive).",
    )
    fetch_min_bytes: int = Field(
        1,
        ge=1,
        description="The worker's stream consumer asks the broker to hold a fetch until "
        "this many bytes are there or fetch_max_wait_ms passed (Apache Kafka; Tansu "
        "always waits the full time). 1 answers each record at once.",
    )
    session_timeout_s: float = Field(
        6.0, gt=0, description="A group join waits about half of this on Tansu."
    )
    heartbeat_interval_s: float = Field(1.0, gt=0)
    rebalance_timeout_s: float = Field(10.0, gt=0)
    max_poll_records: int = Field(5000, ge=1)
    commit_interval_s: float = Field(
        2.8,
        gt=0,
        description="How often a worker commits the offsets of what it processed "
        "(Faust's broker_commit_interval). A batch of memory writes is committed as soon "
        "as it is stored, whatever this is.",
    )
    bundle_max_records: int = Field(
        500,
        ge=1,
        description="A partition's fetched input records are handed to the agent as one "
        "bundle of at most this many (Faust's per-record cost is paid once per bundle); "
        "1 turns bundling off.",
    )
    bundle_max_bytes: int = Field(
        64 * 1024,
        ge=1,
        description="A bundle holds at most this many bytes of record values (about 200 "
        "single-event records, or 4 of the publisher's batched records). Larger bundles "
        "cost resident memory: with 1 MiB a million loops grew a worker by 1,154 MB "
        "instead of about 800 (the allocator kept the larger working set's arenas).",
    )
    stream_buffer_maxsize: int = Field(16384, ge=1)
    producer_linger_ms: int = Field(
        0,
        ge=0,
        description="How long the worker's output sink waits for more outputs before it "
        "sends (0: what one consumed message produced goes at once; under load outputs "
        "still gather while a send is under way). 2 ms cost 2.5 ms of publish->warning "
        "median and saved about 3 µs of CPU per event on a backlog.",
    )
    producer_request_timeout_s: float = Field(
        30.0,
        gt=0,
        description="How long the worker's producer waits for a delivery before it fails "
        "and is retried (Faust's default, 20 minutes, looked like a stalled worker).",
    )
    security: KafkaSecurity = Field(
        KafkaSecurity(), description="TLS and SASL for every client (see KafkaSecurity)."
    )
    probe_end_offsets: bool = Field(
        True,
        description="Read past reported end offsets before table recovery and when a "
        "subscriber starts at the end (Tansu under-reports them; harmless on Kafka).",
    )


class LimitSettings(BaseModel):
    """Input limits and state bounds."""

    model_config = ConfigDict(frozen=True)

    max_event_bytes: int = Field(
        256 * 1024, ge=256, description="Larger events go to the dead-letter topic."
    )
    idle_loop_ttl_s: float = Field(
        3600.0, gt=0, description="Loop state idle this long (event time) is expired."
    )
    expiry_sweep_interval_s: float = Field(30.0, gt=0)
    max_clock_skew_s: float = Field(
        300.0,
        gt=0,
        description="An event's time counts for expiry at most this far past its record's "
        "timestamp (a producer's clock running ahead must not expire other loops).",
    )
    state_cache_loops: int = Field(
        20_000,
        ge=0,
        description="Loop states a worker keeps decoded in memory (0: none); about 3.6 KB "
        "each, on top of every loop's encoded state (about 1 KB) in the table.",
    )
    idle_family_ttl_s: float = Field(
        86_400.0,
        gt=0,
        description="A loop family (guardrail state) idle this long (event time) starts fresh "
        "and is expired.",
    )
    redact_dead_letters: bool = Field(
        False,
        description="Redact dead letters' values too (by default they are the original bytes, "
        "a copy of the input topic for re-processing).",
    )


class ErrorSettings(BaseModel):
    """The one error policy of every agent (see ``loopwarden.streams.runtime.runner``)."""

    model_config = ConfigDict(frozen=True)

    on_processing_error: Literal["dead_letter", "skip", "raise"] = Field(
        "dead_letter",
        description="A record whose processing raised (not bad input, which is always "
        "dead-lettered): dead-letter it, skip it with a log line, or crash the agent.",
    )
    retry_initial_s: float = Field(
        0.5, gt=0, description="First wait before retrying after a transient failure."
    )
    retry_max_s: float = Field(30.0, gt=0, description="Longest wait between retries.")
    max_retries: int = Field(
        5,
        ge=0,
        description="Retries of a record whose processing failed with a retriable error "
        "(a timeout, a model endpoint, a retriable Kafka error) before it takes the "
        "on_processing_error way with reason retries_exhausted. Our own storage or output "
        "being away is not bounded: the partition pauses and says so until it is back.",
    )
    log_burst: int = Field(
        10, ge=1, description="Dead-letter and traceback lines logged per kind per minute."
    )


class PublisherSettings(BaseModel):
    """Client-side batching: events sharing a partition travel in one record."""

    model_config = ConfigDict(frozen=True)

    batch_max_events: int = Field(50, ge=1)
    linger_ms: float = Field(2.0, ge=0)
    acks: Literal["all", "1", "0"] = Field(
        "all", description="Acknowledgements a publish waits for (all in-sync replicas)."
    )
    memory_key: Literal["scope", "memory"] = Field(
        "memory",
        description="Key of a memory write. memory: its memory id, so a scope's writes "
        "spread over every partition and worker (a near-duplicate two workers store at "
        "the same moment is merged by the next maintenance cycle); scope: a scope's "
        "writes in order on one partition, write-time checks exact with any number of "
        "workers, one worker doing all of a scope's writes.",
    )
    idempotence: Literal["auto", "on", "off"] = Field(
        "auto",
        description="Idempotent producer (no duplicates from the client's own retries). "
        "auto: on, falling back with one warning on a broker without it (the embedded "
        "Tansu); events carry ids, so the worker skips a duplicate anyway.",
    )


class Settings(BaseSettings):
    """All of loopwarden's settings. Read from ``LOOPWARDEN_*`` environment variables."""

    model_config = SettingsConfigDict(
        env_prefix="LOOPWARDEN_", env_nested_delimiter="__", frozen=True, extra="ignore"
    )

    app_id: str = Field("loopwarden", description="Faust app id (the consumer group).")
    roles: frozenset[Role] = Field(
        frozenset({"monitor", "guardrails", "fleet", "analyst", "memory", "experience", "hooks"}),
        description="Agents this worker runs. Give a role its own app id to scale it apart, "
        "e.g. LOOPWARDEN_ROLES='[\"analyst\"]' LOOPWARDEN_APP_ID=loopwarden-analyst.",
    )
    web_port: int = Field(
        0, ge=0, description="Port of the worker's HTTP API (Faust web); 0 disables it."
    )
    web_bind: str = Field("127.0.0.1", description="Interface the HTTP API listens on.")
    web_host: str | None = Field(
        None,
        description="Host other workers use to reach this one (request routing); default: "
        "127.0.0.1 when bound to loopback, else this machine's hostname.",
    )
    log_level: str = Field(
        "info",
        description="info: the worker's own lines (started, ready, rebalances, a periodic "
        "summary, errors); Faust and the Kafka client at warning. debug: everything.",
    )
    log_library_info: tuple[str, ...] = Field(
        (),
        description="Library loggers kept at info when log_level is info, for a post-mortem: "
        'e.g. ["faust.tables.recovery"] logs each table recovery\'s highwaters and progress.',
    )
    data_dir: str = Field(
        ".loopwarden", description="Where a worker keeps local files (Faust's data directory)."
    )
    detection: DetectionSettings = DetectionSettings()
    guardrails: GuardrailSettings = GuardrailSettings()
    api: ApiSettings = ApiSettings()
    analyst: AnalystSettings = AnalystSettings()
    memory: MemorySettings = MemorySettings()
    fleet: FleetSettings = FleetSettings()
    experience: ExperienceSettings = ExperienceSettings()
    ingest: IngestSettings = IngestSettings()
    topics: TopicSettings = TopicSettings()
    kafka: KafkaSettings = KafkaSettings()
    limits: LimitSettings = LimitSettings()
    errors: ErrorSettings = ErrorSettings()
    publisher: PublisherSettings = PublisherSettings()
    adapters: AdapterSettings = AdapterSettings()
    gateway: GatewaySettings = GatewaySettings()
    telemetry: TelemetrySettings = TelemetrySettings()
    webhook: WebhookSettings = WebhookSettings()
    sinks: tuple[str, ...] = Field(
        (),
        description="Output sinks of your own, as import paths of their factories "
        '(`["my_team.sinks:jsonl_sink"]`; `factory(settings) -> sink | None`). Installed '
        "packages can register sinks in the `loopwarden.sinks` entry-point group instead.",
    )

    def model_post_init(self, context: Any, /) -> None:
        """The first settings a process builds name its misspelt ``LOOPWARDEN_*``
        variables (:mod:`loopwarden.settings.environment`)."""
        from loopwarden.settings.environment import warn_unknown_variables_once

        warn_unknown_variables_once(type(self))

    def namespaced(
        self, tag: str, *, bootstrap_servers: str | None = None, partitions: int | None = None
    ) -> Settings:
        """A copy whose app id and topic names carry ``tag``: isolated runs on one broker."""
        topics = self.topics.model_copy(
            update={
                "actions": f"{tag}.actions",
                "warnings": f"{tag}.warnings",
                "reflection_requests": f"{tag}.reflection-requests",
                "loop_completions": f"{tag}.loop-completions",
                "reflections": f"{tag}.reflections",
                "memory_writes": f"{tag}.memory-writes",
                "memory_lessons": f"{tag}.memory-lessons",
                "memory_outcomes": f"{tag}.memory-outcomes",
                "decisions": f"{tag}.decisions",
                "dead_letter": f"{tag}.dead-letter",
                "advice": f"{tag}.advice",
                "otlp_spans": f"{tag}.otlp-spans",
                "actions_reroute": f"{tag}.actions-reroute",
                "completions_reroute": f"{tag}.loop-completions-reroute",
                "fleet_reroute": f"{tag}.fleet-reroute",
                "fleet_warnings": f"{tag}.fleet-warnings",
                "tool_outages": f"{tag}.tool-outages",
                "verdicts": f"{tag}.verdicts",
                "partitions": partitions or self.topics.partitions,
            }
        )
        kafka = self.kafka.model_copy(
            update={"bootstrap_servers": bootstrap_servers or self.kafka.bootstrap_servers}
        )
        return self.model_copy(
            update={"app_id": f"{self.app_id}-{tag}", "topics": topics, "kafka": kafka}
        )


def settings_env(settings: Settings) -> dict[str, str]:
    """The ``LOOPWARDEN_*`` variables that give a child process exactly these settings."""
    env: dict[str, str] = {}

    def put(name: str, value: Any) -> None:
        if isinstance(value, BaseModel):
            for field_name in type(value).model_fields:
                put(f"{name}__{field_name.upper()}", getattr(value, field_name))
        elif value is None:
            return
        elif isinstance(value, SecretStr):
            env[name] = value.get_secret_value()
        elif isinstance(value, bool):
            env[name] = "true" if value else "false"
        elif isinstance(value, frozenset | set | list | tuple):
            env[name] = codec.dumps(
                sorted(value) if isinstance(value, frozenset | set) else value
            ).decode()
        else:
            env[name] = str(value)

    for field_name in type(settings).model_fields:
        put(f"LOOPWARDEN_{field_name.upper()}", getattr(settings, field_name))
    return env
