"""Telemetry of a real worker: spans across the broker, exact metrics, /ready, the health page.

One worker (monitor and guardrails) runs for the module with its web port on, its
spans exported over OTLP/HTTP to a receiver in this process (the worker is a child
process; the receiver decodes the same protobuf a collector does). The publisher's
spans go to an in-memory exporter.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
import uuid
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import aiohttp
import pytest
from aiokafka import AIOKafkaProducer
from one_record import process_one
from opentelemetry import propagate
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families

from loopwarden.agents.monitor.declaration import LOOP_STATES
from loopwarden.agents.monitor.records import RecordProcessor
from loopwarden.schemas.dead_letter import SourcePosition
from loopwarden.settings import Settings, TelemetrySettings
from loopwarden.streams.client.event_builder import encode_event, make_action_event
from loopwarden.streams.client.publisher import AsyncPublisher
from loopwarden.streams.client.subscriber import WarningSubscriber
from loopwarden.streams.runtime.state.offline import OfflineStates
from loopwarden.streams.tools.broker import free_port

from .browser import CHROMIUM, CHROMIUM_FLAGS
from .conftest import WorkerProcess, create_topics, isolated_settings

pytestmark = pytest.mark.integration


class OtlpReceiver:
    """An OTLP/HTTP trace endpoint: keeps every span it is sent."""

    def __init__(self) -> None:
        self.spans: list[dict] = []
        self.changed = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest.FromString(body)
                spans = [
                    {
                        "name": span.name,
                        "trace_id": span.trace_id.hex(),
                        "span_id": span.span_id.hex(),
                        "parent_span_id": span.parent_span_id.hex(),
                        "attributes": {a.key: _value(a.value) for a in span.attributes},
                    }
                    for resource in request.resource_spans
                    for scope in resource.scope_spans
                    for span in scope.spans
                ]
                with receiver.changed:
                    receiver.spans.extend(spans)
                    receiver.changed.notify_all()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def wait_for(self, predicate, timeout_s: float = 60.0) -> list[dict]:
        """The spans matching ``predicate``, once there is at least one."""
        deadline = time.monotonic() + timeout_s
        with self.changed:
            while True:
                found = [span for span in self.spans if predicate(span)]
                if found:
                    return found
                left = deadline - time.monotonic()
                assert left > 0, f"no such span among {len(self.spans)} received"
                self.changed.wait(left)


def _value(value):
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, kind)


@pytest.fixture(scope="module")
def receiver():
    otlp = OtlpReceiver()
    otlp.thread.start()
    yield otlp
    otlp.server.shutdown()


@pytest.fixture(scope="module")
def telemetry_worker(broker, receiver, tmp_path_factory):
    """The worker, and the /ready answers seen from its start until it was ready."""
    settings = isolated_settings(broker, "telemetry")
    port = free_port()
    settings = settings.model_copy(
        update={
            "roles": frozenset({"monitor", "guardrails"}),
            "web_port": port,
            "api": settings.api.model_copy(update={"token": "t0ken"}),
            "telemetry": TelemetrySettings(
                traces_exporter="otlp",
                otlp_endpoint=receiver.url,
                export_interval_s=0.2,
                summary_interval_s=1.0,
            ),
        }
    )
    create_topics(settings)
    worker = WorkerProcess(settings, tmp_path_factory.mktemp("telemetry") / "worker.log")
    worker.start()
    answers = asyncio.run(_ready_answers(f"http://127.0.0.1:{port}/ready", worker))
    yield settings, worker, answers
    code = worker.stop()
    assert code == 0, f"worker exited with {code}:\n{worker.log()[-4000:]}"


async def _ready_answers(url: str, worker: WorkerProcess, timeout_s: float = 90.0):
    """Every distinct /ready answer, with the worker's log at that moment, until 200."""
    answers: list[tuple[int, dict, str]] = []
    deadline = time.monotonic() + timeout_s
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            assert worker.process.poll() is None, worker.log()[-4000:]
            try:
                async with session.get(url) as response:
                    answer = (response.status, await response.json())
            except aiohttp.ClientConnectionError:
                await asyncio.sleep(0.05)  # not listening yet: nothing to wait on
                continue
            if not answers or answers[-1][:2] != answer:
                answers.append((*answer, worker.log()))
            if answer[0] == 200:
                return answers
            await asyncio.sleep(0.05)
    raise AssertionError(f"never ready: {answers}")


def base_url(settings: Settings) -> str:
    return f"http://127.0.0.1:{settings.web_port}"


def test_ready_turns_ready_only_after_the_group_join_and_table_recovery(telemetry_worker):
    _, _, answers = telemetry_worker
    statuses = [(status, body["status"]) for status, body, _ in answers]
    assert statuses[0] == (503, "not yet joined the consumer group"), statuses
    assert statuses[-1] == (200, "ready")
    assert all(status == 503 for status, _ in statuses[:-1])
    log_when_ready = answers[-1][2]
    assert "rebalance #1 done" in log_when_ready
    for _, _, log in answers[:-1]:
        assert "worker ready" not in log  # the recovery had not finished


async def test_process_spans_continue_the_publishers_trace_and_warnings_carry_it(
    telemetry_worker, receiver
):
    settings, _, _ = telemetry_worker
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("agent")
    batched, single = f"batched-{uuid.uuid4().hex[:6]}", f"single-{uuid.uuid4().hex[:6]}"

    async with WarningSubscriber(settings, loop_id=batched) as warnings:
        # three events of one loop, published at once: one record holding a JSON array
        async with AsyncPublisher(settings, tracer_provider=provider) as publisher:
            with tracer.start_as_current_span("agent step"):
                ids = [await publisher.publish(batched, "shell") for _ in range(3)]
        # another producer's single-event record: the trace context in its headers only
        headers: list[tuple[str, bytes]] = []
        with tracer.start_as_current_span("foreign step") as foreign:
            carrier: dict[str, str] = {}
            propagate.inject(carrier)
            headers = [(k, v.encode()) for k, v in carrier.items()]
        producer = AIOKafkaProducer(bootstrap_servers=settings.kafka.bootstrap_servers)
        await producer.start()
        try:
            event = make_action_event(single, "search")
            await producer.send_and_wait(
                settings.topics.actions, encode_event(event), key=single.encode(), headers=headers
            )
        finally:
            await producer.stop()
        (warning,) = await warnings.collect(1, 60)

    creates = {
        s.attributes["messaging.message.id"]: s
        for s in exporter.get_finished_spans()
        if s.name.startswith("create ")
    }
    assert set(creates) == set(ids)
    batched_spans = await asyncio.to_thread(
        receiver.wait_for,
        lambda s: (
            s["name"].startswith("process ")
            and s["attributes"].get("gen_ai.conversation.id") == batched
            and s["attributes"]["messaging.message.id"] == ids[-1]
        ),
    )
    (process,) = batched_spans
    create = creates[ids[-1]]
    assert process["trace_id"] == format(create.context.trace_id, "032x")
    assert process["parent_span_id"] == format(create.context.span_id, "016x")
    attributes = process["attributes"]
    assert attributes["messaging.system"] == "kafka"
    assert attributes["messaging.operation.type"] == "process"
    assert attributes["messaging.destination.name"] == settings.topics.actions
    assert attributes["messaging.consumer.group.name"] == settings.app_id
    assert attributes["gen_ai.tool.name"] == "shell"
    assert isinstance(attributes["messaging.kafka.offset"], int)
    # the create spans are children of the agent's span
    agent = next(s for s in exporter.get_finished_spans() if s.name == "agent step")
    assert create.parent.span_id == agent.context.span_id

    # detection is a child span with the loop's health
    (detect,) = await asyncio.to_thread(
        receiver.wait_for,
        lambda s: s["name"] == "loopwarden.detect" and s["parent_span_id"] == process["span_id"],
    )
    assert detect["attributes"]["loopwarden.spin.kind"] == ["action_type_spin"]
    assert detect["attributes"]["loopwarden.spin.consecutive_count"] == 3

    # the warning carries the context of the process span of the event that caused it
    assert warning.trigger_event_id == ids[-1]
    assert warning.trace_context is not None
    _, trace_id, span_id, _ = warning.trace_context["traceparent"].split("-")
    assert (trace_id, span_id) == (process["trace_id"], process["span_id"])

    (foreign_process,) = await asyncio.to_thread(
        receiver.wait_for,
        lambda s: (
            s["name"].startswith("process ")
            and s["attributes"].get("gen_ai.conversation.id") == single
        ),
    )
    assert foreign_process["trace_id"] == format(foreign.get_span_context().trace_id, "032x")
    assert foreign_process["parent_span_id"] == format(foreign.get_span_context().span_id, "016x")


async def scrape(session: aiohttp.ClientSession, settings: Settings) -> dict[tuple, float]:
    async with session.get(base_url(settings) + "/metrics") as response:
        assert response.status == 200
        text = await response.text()
    samples: dict[tuple, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = tuple(
                sorted((k, v) for k, v in sample.labels.items() if not k.startswith("otel_"))
            )
            samples[sample.name, labels] = sample.value
    return samples


def counts(samples: dict[tuple, float]) -> dict[str, Counter]:
    found: dict[str, Counter] = {"events": Counter(), "warnings": Counter(), "dead": Counter()}
    for (name, labels), value in samples.items():
        label = dict(labels)
        if name == "loopwarden_events_total":
            found["events"][label["loopwarden_agent"]] += value
        elif name == "loopwarden_warnings_total":
            kind_level = (label["loopwarden_warning_kind"], label["loopwarden_warning_level"])
            found["warnings"][kind_level] += value
        elif name == "loopwarden_dead_letters_total":
            found["dead"][label["loopwarden_dead_letter_reason"]] += value
    return found


def expected_counts(settings: Settings, records: list[bytes]) -> dict[str, Counter]:
    """What the worker must count for ``records``, by the same logic without a broker."""
    processor = RecordProcessor.for_settings(settings)
    states = OfflineStates.for_settings(LOOP_STATES, settings)
    found: dict[str, Counter] = {"events": Counter(), "warnings": Counter(), "dead": Counter()}
    for offset, value in enumerate(records):
        source = SourcePosition(settings.topics.actions, 0, offset, None)
        outcome = states.apply(processor, value, None, source)
        found["events"]["monitor_actions"] += outcome.events
        found["warnings"].update((w["kind"], w["level"]) for w in outcome.warnings)
        found["dead"].update(letter.reason for letter in outcome.dead_letters)
    return found


async def test_metrics_endpoint_counts_a_known_stream_exactly(telemetry_worker):
    settings, _, _ = telemetry_worker
    loop = f"metrics-{uuid.uuid4().hex[:6]}"
    good = [make_action_event(loop, kind) for kind in ["shell"] * 5 + ["edit", "test"] * 2]
    records = [encode_event(e) for e in good[:4]]
    records.append(b"[" + b",".join(encode_event(e) for e in good[4:]) + b', {"event_id": 1}]')
    records.append(b"{not json")
    expected = expected_counts(settings, records)
    assert expected["dead"] and expected["warnings"]  # the stream exercises every count

    async with aiohttp.ClientSession() as session:
        before = counts(await scrape(session, settings))
        producer = AIOKafkaProducer(bootstrap_servers=settings.kafka.bootstrap_servers)
        await producer.start()
        try:
            for value in records:
                await producer.send_and_wait(settings.topics.actions, value, key=loop.encode())
        finally:
            await producer.stop()
        deadline = time.monotonic() + 60
        while True:
            now = counts(await scrape(session, settings))
            delta = {name: now[name] - before[name] for name in now}
            if delta["events"] == expected["events"] and delta["dead"] == expected["dead"]:
                break
            assert time.monotonic() < deadline, f"counted {delta}, expected {expected}"
            await asyncio.sleep(0.2)  # polling the endpoint until it has counted
        assert delta["warnings"] == expected["warnings"]
        # lag is reported per input partition and is never negative
        samples = await scrape(session, settings)
        lags = {
            dict(labels)["messaging_destination_partition_id"]: value
            for (name, labels), value in samples.items()
            if name == "loopwarden_consumer_lag"
            and dict(labels)["messaging_destination_name"] == settings.topics.actions
        }
        assert sorted(lags) == [str(p) for p in range(settings.topics.partitions)]
        assert all(value >= 0 for value in lags.values())


async def test_loop_health_page_shows_a_spinning_loop_and_updates(telemetry_worker, tmp_path):
    from playwright.async_api import async_playwright

    settings, _, _ = telemetry_worker
    loop = f"page-{uuid.uuid4().hex[:6]}"
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=CHROMIUM_FLAGS,  # Playwright adds --headless and a new empty profile
        )
        try:
            page = await browser.new_page()
            await page.goto(base_url(settings) + "/loops?interval=0.3")
            await page.wait_for_function(
                "document.getElementById('status').textContent === 'ready'", timeout=30_000
            )
            actions_before = int(await page.text_content("#actions"))
            assert await page.locator(f'#spinning tr[data-key="{loop}"]').count() == 0
            events = [make_action_event(loop, "shell") for _ in range(4)]
            reference = process_one(
                RecordProcessor.for_settings(settings),
                LOOP_STATES,
                b"[" + b",".join(map(encode_event, events)) + b"]",
                None,
                SourcePosition(settings.topics.actions, 0, 0, None),
            )
            last = reference.warnings[-1]
            async with AsyncPublisher(settings) as publisher:
                for event in events:
                    publisher.publish_event(event)
                await publisher.complete_loop(loop, alignment_score=0.4, drift_score=0.1)
            row = page.locator(f'#spinning tr[data-key="{loop}"]')
            await row.wait_for(timeout=30_000)
            await page.wait_for_function(  # every warning of the loop has been shown
                f"""document.querySelector('#spinning tr[data-key="{loop}"]')
                    .cells[4].textContent === '{len(reference.warnings)}'""",
                timeout=30_000,
            )
            cells = await row.locator("td").all_text_contents()
            kinds = list(dict.fromkeys(w["kind"] for w in reference.warnings))  # first → latest
            assert cells[:4] == [
                loop,
                " → ".join(kinds),
                last["level"],
                str(last["consecutive_count"]),
            ]
            assert cells[5] == (last["step"] or "–")  # the ladder step the loop was told
            await page.wait_for_function(  # actions, not every agent's events: exactly ours
                f"Number(document.getElementById('actions').textContent) >= {actions_before + 4}",
                timeout=30_000,
            )
            # sparklines of the readings so far, and zero-lag partitions folded into a line
            await page.wait_for_function(
                "Number(document.getElementById('history-length').textContent) >= 3",
                timeout=30_000,
            )
            points = await page.get_attribute("#spark-actions polyline", "points")
            assert len(points.split()) >= 3
            assert int(await page.text_content("#history-length")) >= 3
            listed = await page.locator("#lag-partitions tbody tr").count()
            zero_note = await page.text_content("#lag-zero")
            assert listed == 1 or "at lag 0 not listed" in zero_note
            last_kind = last["kind"]
            kind = page.locator(f'#kinds tr[data-key="{last_kind}"] td')
            assert int((await kind.all_text_contents())[1]) >= 1
            family = page.locator(f'#families tr[data-key="{loop}"]')
            await family.wait_for(timeout=30_000)
            # a first completion below the alignment threshold: rerun 1 of 3, no fatigue yet
            assert await family.locator("td").all_text_contents() == [
                loop,
                loop,
                "0.00",
                "1 / 3",
                "rerun",
            ]
            # into one loop: its link opens its view, each warning with what it was told
            await row.locator("td").first.locator("a").click()
            await page.wait_for_function(
                "!document.getElementById('loop-detail').hidden", timeout=30_000
            )
            assert f"loop={loop}" in page.url
            assert await page.text_content("#loop-detail-id") == loop
            told = page.locator("#loop-warnings tbody tr")
            await page.wait_for_function(
                f"document.querySelectorAll('#loop-warnings tbody tr').length === "
                f"{len(reference.warnings)}",
                timeout=30_000,
            )
            newest = await told.first.locator("td.message").text_content()
            assert newest == last["timeline_message"]
            shot = tmp_path / "loops.png"
            await page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 10_000  # a rendered page, looked at by people too
        finally:
            await browser.close()


async def test_worker_logs_its_lifecycle_and_a_summary_at_the_default_level(telemetry_worker):
    _, worker, _ = telemetry_worker
    assert Settings().log_level == "info"
    deadline = time.monotonic() + 30
    while " dead letters; lag " not in worker.log():  # the summary comes every second here
        assert time.monotonic() < deadline, worker.log()[-3000:]
        await asyncio.sleep(0.2)
    log = worker.log()
    lifecycle = ("worker started: group", "rebalance #1 started", "rebalance #1 done", "ready")
    for line in lifecycle:
        assert line in log, log[-3000:]
    assert re.search(r"last \d+ s: \d+ events \([\d.]+/s\), \d+ warnings, \d+ dead letters", log)
    assert "Starting..." not in log  # Faust's service narration stays at debug
    assert "Missing sensor state" not in log  # the lifecycle sensor keeps rebalance state
