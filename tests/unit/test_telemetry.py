"""Telemetry without a broker: trace context through the publisher and the record processor,
metric instruments, the loop-health aggregate, the summary line, provider settings."""

from __future__ import annotations

import orjson
import pytest
from one_record import process_one
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from loopwarden.agents.monitor.declaration import LOOP_STATES
from loopwarden.agents.monitor.records import RecordProcessor
from loopwarden.errors import EventValidationError
from loopwarden.schemas.dead_letter import SourcePosition
from loopwarden.schemas.events import validate_action
from loopwarden.settings import DetectionSettings, Settings, TelemetrySettings
from loopwarden.streams.client.event_builder import encode_event, make_action_event
from loopwarden.streams.client.propagation import carrier_of, extract, headers_of
from loopwarden.streams.client.publishing import PublishSpans
from loopwarden.streams.runtime.telemetry.loop_health import LoopHealth
from loopwarden.streams.runtime.telemetry.metrics import Totals, WorkerMetrics
from loopwarden.streams.runtime.telemetry.providers import start_telemetry
from loopwarden.streams.runtime.telemetry.spans import EventSpans, chat_span
from loopwarden.streams.runtime.telemetry.summary import Summary

SEED = DetectionSettings(profile="seed")  # these tests use the seed's triggers

SOURCE = SourcePosition("lw.actions", 2, 41, None)


@pytest.fixture
def spans():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def ids(traceparent: str) -> tuple[str, str]:
    _, trace_id, span_id, _ = traceparent.split("-")
    return trace_id, span_id


def hex_ids(context) -> tuple[str, str]:
    return format(context.trace_id, "032x"), format(context.span_id, "016x")


def test_publisher_stamps_each_event_with_its_create_span_under_the_callers_span(spans):
    provider, exporter = spans
    publishing = PublishSpans("lw.actions", provider)
    with provider.get_tracer("agent").start_as_current_span("agent step") as agent:
        stamped = publishing.stamp(make_action_event("loop-1", "shell"))
    (create,) = [s for s in exporter.get_finished_spans() if s.name == "create lw.actions"]
    assert create.kind is trace.SpanKind.PRODUCER
    assert create.parent.span_id == agent.get_span_context().span_id
    assert ids(stamped.trace_context["traceparent"]) == hex_ids(create.context)
    assert create.attributes["messaging.message.id"] == stamped.event_id
    assert create.attributes["gen_ai.conversation.id"] == "loop-1"
    assert create.attributes["gen_ai.tool.name"] == "shell"


def test_publisher_passes_a_callers_context_on_without_an_sdk_and_adds_none_without_one():
    publishing = PublishSpans("lw.actions")  # the global (no-op) provider
    event = make_action_event("loop-1", "shell")
    assert publishing.stamp(event).trace_context is None
    caller = SpanContext(0x1234, 0x5678, is_remote=False, trace_flags=TraceFlags(1))
    with trace.use_span(NonRecordingSpan(caller)):
        stamped = publishing.stamp(event)
    assert ids(stamped.trace_context["traceparent"]) == (f"{0x1234:032x}", f"{0x5678:016x}")
    kept = event.model_copy(
        update={"trace_context": {"traceparent": "00-" + "a" * 32 + "-" + "b" * 16 + "-01"}}
    )
    assert publishing.stamp(kept) is kept  # a context the caller set is kept


def test_trace_context_is_validated_with_its_path():
    event = encode_event(make_action_event("loop-1", "shell"))
    data = orjson.loads(event)
    data["trace_context"] = {"traceparent": "00-x", "baggage": "a=b"}
    with pytest.raises(EventValidationError) as err:
        validate_action(data)
    assert err.value.errors[0].path == "trace_context"
    assert "baggage" in str(err.value)
    data["trace_context"] = {"traceparent": "0" * 129}
    with pytest.raises(EventValidationError, match="longer than 128"):
        validate_action(data)


def test_event_context_wins_over_the_record_header():
    event_ctx = {"traceparent": f"00-{'1' * 32}-{'2' * 16}-01"}
    header_ctx = {"traceparent": f"00-{'3' * 32}-{'4' * 16}-01"}
    from_event = trace.get_current_span(extract(event_ctx, headers_of(header_ctx)))
    from_header = trace.get_current_span(extract(None, headers_of(header_ctx)))
    assert format(from_event.get_span_context().trace_id, "032x") == "1" * 32
    assert format(from_header.get_span_context().trace_id, "032x") == "3" * 32
    assert extract(None, [("other", b"x")]) is None
    assert carrier_of() is None  # no current span: nothing to carry


def batch_of_three_agents(spans_provider):
    """Three loops' events in one record, each published under its own agent span."""
    provider, _ = spans_provider
    publishing = PublishSpans("lw.actions", provider)
    tracer = provider.get_tracer("agents")
    events, agents = [], []
    for loop in ("a", "b", "a", "a"):
        with tracer.start_as_current_span(f"agent {loop}") as agent:
            events.append(publishing.stamp(make_action_event(f"loop-{loop}", "shell")))
            agents.append(agent)
    return b"[" + b",".join(map(encode_event, events)) + b"]", events


def test_each_event_of_a_batch_gets_a_process_span_under_its_own_publisher_span(spans):
    provider, exporter = spans
    value, events = batch_of_three_agents(spans)
    processor = RecordProcessor(SEED)
    processor.instrument = EventSpans(provider.get_tracer("worker"), group="lw")
    outcome = process_one(processor, LOOP_STATES, value, None, SOURCE)

    finished = exporter.get_finished_spans()
    creates = {
        s.attributes["messaging.message.id"]: s for s in finished if s.name.startswith("create")
    }
    processes = {
        s.attributes["messaging.message.id"]: s for s in finished if s.name == "process lw.actions"
    }
    assert set(processes) == {e.event_id for e in events}
    for event_id, process in processes.items():
        assert process.kind is trace.SpanKind.CONSUMER
        assert process.parent.span_id == creates[event_id].context.span_id
        assert process.context.trace_id == creates[event_id].context.trace_id
        assert process.attributes["messaging.destination.partition.id"] == "2"
        assert process.attributes["messaging.kafka.offset"] == 41
        assert process.attributes["messaging.consumer.group.name"] == "lw"
    detects = [s for s in finished if s.name == "loopwarden.detect"]
    assert {d.parent.span_id for d in detects} == {p.context.span_id for p in processes.values()}

    # loop-a's third shell is a spin: the warning carries its process span's context
    (warning,) = outcome.warnings
    spinning = processes[events[3].event_id]
    assert ids(warning["trace_context"]["traceparent"]) == hex_ids(spinning.context)
    (detect,) = [d for d in detects if d.parent.span_id == spinning.context.span_id]
    assert detect.attributes["loopwarden.spin.kind"] == (warning["kind"],)
    assert detect.attributes["loopwarden.spin.consecutive_count"] == 3
    published_at = orjson.loads(value)[3]["published_at"]
    assert outcome.warned == [(warning["kind"], published_at)]


def test_without_tracing_warnings_carry_the_events_own_context(spans):
    value, events = batch_of_three_agents(spans)
    outcome = process_one(RecordProcessor(SEED), LOOP_STATES, value, None, SOURCE)
    (warning,) = outcome.warnings
    assert warning["trace_context"] == events[3].trace_context
    assert all(r["trace_context"] in (None, events[3].trace_context) for r in outcome.requests)


def test_worker_metrics_count_by_their_attributes():
    reader = InMemoryMetricReader()
    metrics = WorkerMetrics(MeterProvider(metric_readers=[reader]).get_meter("t"))
    metrics.events("monitor_actions", 5)
    metrics.warning("action_type_spin", "minimal")
    metrics.warning("action_type_spin", "minimal")
    metrics.warning("cycle_spin", "deep")
    metrics.dead_letter("decode")
    metrics.memory_rows(3)
    metrics.warning_latency("cycle_spin", 0.004)
    points = {}
    for resource in reader.get_metrics_data().resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                for point in metric.data.data_points:
                    key = (metric.name, tuple(sorted(point.attributes.items())))
                    points[key] = getattr(point, "value", None) or getattr(point, "count", None)
    assert points[("loopwarden.events", (("loopwarden.agent", "monitor_actions"),))] == 5
    spin = (
        ("loopwarden.warning.kind", "action_type_spin"),
        ("loopwarden.warning.level", "minimal"),
    )
    assert points[("loopwarden.warnings", spin)] == 2
    assert points[("loopwarden.dead_letters", (("loopwarden.dead_letter.reason", "decode"),))] == 1
    assert points[("loopwarden.memory.rows_written", ())] == 3
    assert points[("loopwarden.warning.latency", (("loopwarden.warning.kind", "cycle_spin"),))] == 1
    assert metrics.totals.warnings[("action_type_spin", "minimal")] == 2
    metrics.warning("action_type_spin", "minimal")  # the next collection sees the new total
    (data,) = reader.get_metrics_data().resource_metrics
    (warnings,) = [m for m in data.scope_metrics[0].metrics if m.name == "loopwarden.warnings"]
    assert {tuple(sorted(p.attributes.items())): p.value for p in warnings.data.data_points}[
        spin
    ] == 3
    assert warnings.data.is_monotonic


def warning(loop_id: str, kind: str = "action_type_spin", count: int = 3) -> dict:
    return {"loop_id": loop_id, "kind": kind, "level": "minimal", "consecutive_count": count}


def test_loop_health_episodes_end_after_the_quiet_window_and_stay_bounded():
    health = LoopHealth(recent=3, episode_s=60, max_loops=2)
    health.warning(warning("a"), now=0)
    health.warning(warning("a", count=4), now=10)
    health.warning(warning("b", kind="rerun_limit_reached"), now=10)  # a guardrail, not a spin
    snapshot = health.snapshot(now=20)
    assert [
        (s["loop_id"], s["warnings"], s["consecutive_count"]) for s in snapshot["spinning_loops"]
    ] == [("a", 2, 4)]
    assert snapshot["spinning_loops"][0]["since_s"] == 20
    assert health.snapshot(now=71)["spinning_loops"] == []  # quiet for more than 60 s
    health.warning(warning("a"), now=100)  # a new episode
    assert health.snapshot(now=100)["spinning_loops"][0]["warnings"] == 1
    for loop in "cde":
        health.warning(warning(loop), now=101)
    assert [s["loop_id"] for s in health.snapshot(now=101)["spinning_loops"]] == ["e", "d"]
    assert len(health.recent) == 3
    assert health.snapshot(now=101)["warnings_by_kind"]["action_type_spin"] == 6


def test_loop_health_keeps_each_familys_latest_guardrail_result():
    health = LoopHealth()
    health.family(
        {
            "family_id": "f",
            "loop_id": "f",
            "reflection_result": {"reflection_fatigue": 0.15},
            "decision_result": {"decision": "rerun", "rerun_count": 1, "max_reruns": 3},
        }
    )
    health.family(
        {
            "family_id": "f",
            "loop_id": "f_r1",
            "reflection_result": {"reflection_fatigue": 0.3},
            "decision_result": {
                "decision": "finalize",
                "rerun_count": 1,
                "max_reruns": 3,
                "finalize_reason": "thresholds_met",
            },
        }
    )
    health.family({"status": "recorded"})  # an override's answer: no family result
    (family,) = health.snapshot()["families"]
    assert family == {
        "family_id": "f",
        "loop_id": "f_r1",
        "fatigue": 0.3,
        "reruns": 1,
        "max_reruns": 3,
        "decision": "finalize",
        "finalize_reason": "thresholds_met",
    }


def test_summary_line_reports_the_interval_since_the_last_line():
    totals = Totals()
    summary = Summary(totals, now=0)
    totals.events["monitor_actions"] += 120
    totals.warnings["action_type_spin", "minimal"] += 3
    totals.dead_letters["decode"] += 1
    assert summary.line(lag=7, now=60) == (
        "last 60 s: 120 events (2.0/s), 3 warnings, 1 dead letters; lag 7"
    )
    totals.events["apply_guardrails"] += 30
    assert summary.line(lag=0, now=90) == (
        "last 30 s: 30 events (1.0/s), 0 warnings, 0 dead letters; lag 0"
    )


def test_chat_span_injects_its_context_into_the_request_headers(spans):
    provider, exporter = spans
    headers = {"Content-Type": "application/json"}
    with chat_span(
        provider.get_tracer("t"), "gpt-x", "http://127.0.0.1:8000/v1/chat/completions", headers
    ) as span:
        span.set_attribute("http.response.status_code", 200)
    (chat,) = exporter.get_finished_spans()
    assert chat.name == "chat gpt-x" and chat.kind is trace.SpanKind.CLIENT
    assert chat.attributes["gen_ai.operation.name"] == "chat"
    assert chat.attributes["server.port"] == 8000
    assert ids(headers["traceparent"]) == hex_ids(chat.context)
    plain: dict[str, str] = {}
    with chat_span(None, "gpt-x", "http://h/v1", plain) as nothing:
        assert nothing is None
    assert "traceparent" not in plain


def test_providers_follow_the_settings():
    quiet = start_telemetry(Settings())
    assert quiet.tracer is None and quiet.registry is None  # no spans, no web port
    served = start_telemetry(Settings(web_port=6066))
    assert served.registry is not None
    traced = start_telemetry(
        Settings(telemetry=TelemetrySettings(traces_exporter="console", sample_ratio=0.5))
    )
    assert traced.tracer is not None
    assert "0.5" in traced.tracer_provider.sampler.get_description()
    for telemetry in (quiet, served, traced):
        telemetry.shutdown()


def test_loop_health_shows_the_ladder_step_each_loop_was_told():
    health = LoopHealth()
    for step in ("warn", "escalate", None, "stop"):  # a non-laddered warning keeps the step
        health.warning({**warning("a"), "step": step}, now=1)
    (episode,) = health.snapshot(now=2)["spinning_loops"]
    assert episode["step"] == "stop" and episode["warnings"] == 4
    assert [w["step"] for w in health.snapshot(now=2)["recent_warnings"]] == [
        "stop",
        None,
        "escalate",
        "warn",
    ]


def test_throughput_gives_each_rate_between_readings_a_second_apart():
    from loopwarden.streams.runtime.telemetry.web import Throughput

    rates = Throughput()
    assert rates.update((10, 1, 0), now=100.0) == (0.0, 0.0, 0.0)  # a first reading
    assert rates.update((15, 1, 0), now=100.5) == (0.0, 0.0, 0.0)  # too soon: kept
    assert rates.update((30, 5, 2), now=102.0) == (10.0, 2.0, 1.0)


def test_the_lag_of_an_idle_partition_after_a_rebalance_is_zero():
    """Issue 32, item 4: after a rebalance an idle worker reported lag 1 on every partition
    it had committed. Faust's seek leaves the read offset at the next record to read (the
    committed one); the gauge took it for the last record read, plus one. No record was
    unprocessed and no commit lost: the gauge now reads the high-water mark only."""
    from types import SimpleNamespace

    from faust.types import TP

    from loopwarden.streams.runtime.telemetry.metrics import partition_lags

    class Consumer:  # the attributes of Faust's consumer the gauge reads
        def __init__(self) -> None:
            self.tps = [TP("x.actions", 0), TP("x.actions", 1), TP("x-changelog", 0)]
            self._committed_offset = {self.tps[0]: 12, self.tps[1]: 7}
            self._read_offset = {self.tps[0]: 12, self.tps[1]: 5}  # after a seek; mid-read
            self.ends = {self.tps[0]: 12, self.tps[1]: 9, self.tps[2]: 3}

        def assignment(self):
            return set(self.tps)

        def highwater(self, tp):
            return self.ends[tp]

    lags = partition_lags(SimpleNamespace(consumer=Consumer()))
    assert [(lag.topic, lag.partition, lag.lag) for lag in lags] == [
        ("x.actions", 0, 0),  # idle after a rebalance: nothing to do
        ("x.actions", 1, 2),  # two records past the committed offset
    ]


def test_an_episode_keeps_the_kind_that_started_it():
    """Issue 47, item 12: the column showed only the latest kind, hiding the detector
    that started the episode."""
    health = LoopHealth()
    for kind in ("repeated_outcome", "action_failed", "repeated_outcome", "failure_streak"):
        health.warning(warning("a", kind=kind), now=1)
    (episode,) = health.snapshot(now=2)["spinning_loops"]
    assert episode["kind"] == "failure_streak"
    assert episode["kinds"] == ["repeated_outcome", "action_failed", "failure_streak"]


def test_the_page_says_what_repeated():
    from loopwarden.streams.runtime.telemetry.loop_health import LoopHealth

    health = LoopHealth()
    facts = {
        "how": "same_failure",
        "tool": "shell",
        "call": "pytest -x",
        "line": "E   boom",
        "count": 3,
        "since": 1,
        "agent": None,
    }
    base = {
        "kind": "repeated_outcome",
        "loop_id": "L",
        "level": "standard",
        "reason": "r",
        "timeline_message": "told",
    }
    health.warning({**base, "repeated": facts}, now=1.0)
    health.warning({**base, "kind": "action_failed"}, now=2.0)
    recent = health.snapshot(now=3.0)["recent_warnings"]
    assert [row["what"] for row in recent] == [None, "shell `pytest -x` ×3 → “E   boom”"]
    assert health.loop("L")["warnings"][1]["message"] == "told"
