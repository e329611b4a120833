"""A flood of bad input interleaved with good events: every bad one dead-lettered with a
readable reason, no good one lost, and the good events' throughput during the
flood compared with the same events alone (same run, fresh topics)."""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import Counter
from functools import reduce
from typing import Any

from aiokafka import AIOKafkaProducer

from faultsuite.harness import (
    Cluster,
    cluster,
    expected_outputs,
    make_workload,
    wait_ready,
)
from loopwarden.cli.runtime import stop_process
from loopwarden.schemas import codec
from loopwarden.streams.client.publisher import encode_event, make_action_event
from loopwarden.streams.client.subscriber import DeadLetterSubscriber, WarningSubscriber

MAX_EVENT_BYTES = 8192
REASONS = frozenset({"decode", "validation", "too_large"})


def _event(rng: random.Random, **payload: Any) -> dict[str, Any]:
    return {
        "event_id": f"bad-{rng.getrandbits(64):x}",
        "loop_id": f"bad-loop-{rng.randint(0, 50)}",
        "occurred_at": 1_767_225_600,
        "payload": {"action_type": "shell", **payload},
    }


def _sized(rng: random.Random, size: int) -> bytes:
    event = _event(rng, params={"pad": ""})
    base = len(codec.dumps(event))
    event["payload"]["params"]["pad"] = "x" * (size - base)
    return codec.dumps(event)


def bad_record(kind: str, rng: random.Random) -> tuple[bytes | None, bytes | None, int]:
    """(key, value, dead letters it must produce) for one kind of bad input."""
    good = codec.dumps(_event(rng))
    records: dict[str, tuple[bytes | None, bytes | None, int]] = {
        "invalid_json": (b"k", b'{"event_id": "x", "payload": ', 1),
        "invalid_utf8": (b"k", b'{"event_id": "\xff\xfe"}', 1),
        "mixed_array": (b"k", b"[" + good + b',{"event_id": "half"}]', 1),
        "wrong_types": (b"k", codec.dumps(_event(rng, action_type=5, success=[1])), 1),
        "missing_fields": (b"k", codec.dumps({"event_id": "m", "loop_id": "l"}), 1),
        "unknown_version": (b"k", codec.dumps({**_event(rng), "schema_version": 99}), 1),
        "just_over_limit": (b"k", _sized(rng, MAX_EVENT_BYTES + 1), 1),
        "deep_nesting": (
            b"k",
            codec.dumps(_event(rng, params=reduce(lambda v, _: {"x": v}, range(40), {}))),
            1,
        ),
        "nan": (b"k", good.replace(b'"occurred_at":1767225600', b'"occurred_at":NaN'), 1),
        "null_value": (b"k", None, 1),
        "empty_value": (b"k", b"", 1),
        "json_null": (b"k", b"null", 1),
        "control_char_loop_id": (b"k", codec.dumps({**_event(rng), "loop_id": "a\x00b"}), 1),
        "long_loop_id": (b"k", codec.dumps({**_event(rng), "loop_id": "x" * 300}), 1),
        "huge_integer": (b"k", codec.dumps(_event(rng, iteration=2**64 - 1)), 1),
        "array_of_scalars": (b"k", b'[1, "x", null]', 3),
        "bare_string": (b"k", b'"hello"', 1),
    }
    return records[kind]


KINDS = (
    "invalid_json",
    "invalid_utf8",
    "mixed_array",
    "wrong_types",
    "missing_fields",
    "unknown_version",
    "just_over_limit",
    "deep_nesting",
    "nan",
    "null_value",
    "empty_value",
    "json_null",
    "control_char_loop_id",
    "long_loop_id",
    "huge_integer",
    "array_of_scalars",
    "bare_string",
)


def _interleave(good: list[Any], bad: list[Any]) -> list[Any]:
    """Spread ``bad`` evenly among ``good`` (both keep their order)."""
    tagged = [(i / max(1, len(good)), 0, x) for i, x in enumerate(good)]
    tagged += [(j / max(1, len(bad)), 1, x) for j, x in enumerate(bad)]
    return [x for _, _, x in sorted(tagged, key=lambda t: (t[0], t[1]))]


async def _run_phase(c: Cluster, seed: int, good: int, bad: int) -> dict[str, Any]:
    """Publish ``good`` single-event records and ``bad`` bad records spread among them;
    wait for every expected warning and dead letter.

    One good event in 50 has a null or an empty key (it is re-routed, not lost). A loop's
    events with no usable key land on any partition, so their order is not kept: those
    events are single failed actions of loops of their own, whose warning does not
    depend on order."""
    rng = random.Random(seed)
    workload = make_workload(seed, max(1, good // 25), 25, fail_p=0.0)
    unkeyed = [
        make_action_event(f"unkeyed-{seed}-{i}", "deploy", success=False, error_message="e")
        for i in range(len(workload.events) // 50)
    ]
    workload.events.extend(unkeyed)
    expected = expected_outputs(workload, c.settings)
    good_records = [
        (e.loop_id.encode(), encode_event(e)) for e in workload.events[: -len(unkeyed) or None]
    ]
    good_records = _interleave(
        good_records,
        [(None if i % 2 else b"", encode_event(e)) for i, e in enumerate(unkeyed)],
    )
    kinds: Counter[str] = Counter(KINDS[i % len(KINDS)] for i in range(bad))
    bad_records = [bad_record(KINDS[i % len(KINDS)], rng) for i in range(bad)]
    letters_expected = sum(letters for _, _, letters in bad_records)
    records = _interleave(good_records, [(k, v) for k, v, _ in bad_records])
    settings = c.settings
    await wait_ready(settings)
    producer = AIOKafkaProducer(bootstrap_servers=settings.kafka.bootstrap_servers, linger_ms=2)
    async with (
        WarningSubscriber(settings) as warnings,
        DeadLetterSubscriber(settings) as dead,
    ):
        await producer.start()
        began = time.monotonic()
        try:
            for key, value in records:
                await producer.send(settings.topics.actions, value=value, key=key)
            await producer.flush()
        finally:
            await producer.stop()
        wanted = set(expected.warnings)
        seen: set[str] = set()

        async def until_all() -> None:
            async for warning in warnings:
                seen.add(warning.warning_id)
                if wanted <= seen:
                    return

        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(until_all(), 300)
        elapsed = time.monotonic() - began
        letters = await dead.collect(letters_expected, 120) if letters_expected else []
    reasons = Counter(letter.reason for letter in letters)
    return {
        "good_events": len(workload.events),
        "good_events_per_s": round(len(workload.events) / elapsed, 1),
        "good_warnings_expected": len(wanted),
        "good_warnings_missing": len(wanted - seen),
        "bad_records": bad,
        "bad_kinds": len(kinds),
        "dead_letters_expected": letters_expected,
        "dead_letters": len(letters),
        "dead_letters_by_reason": dict(reasons),
        "unreadable_reasons": sum(
            1 for letter in letters if letter.reason not in REASONS or not letter.message
        ),
    }


async def bad_input_run(seed: int, *, bad: int = 10_000, good: int = 3_000) -> dict[str, Any]:
    """The good events alone (baseline), then again with the flood, each on a fresh worker
    and fresh topics of one broker."""
    with cluster(
        f"bad{seed}",
        analyst={"enabled": False},
        memory={"maintenance_interval_s": 0},
        limits={"max_event_bytes": MAX_EVENT_BYTES},
        log_level="warning",
    ) as c:
        worker = c.start_worker()
        baseline = await _run_phase(c, seed, good, 0)
        stop_process(worker)
        c.renamespace("flood")
        c.start_worker()
        flood = await _run_phase(c, seed + 1, good, bad)
        log_lines = c.worker_logs().count("\n")
    return {
        "seed": seed,
        "baseline_good_events_per_s": baseline["good_events_per_s"],
        "baseline_missing": baseline["good_warnings_missing"],
        **flood,
        "throughput_ratio": round(flood["good_events_per_s"] / baseline["good_events_per_s"], 3),
        "worker_log_lines": log_lines,
    }


def bad_input_ok(result: dict[str, Any]) -> bool:
    """Every bad record dead-lettered readably, no good event lost."""
    return (
        result["dead_letters"] == result["dead_letters_expected"]
        and result["unreadable_reasons"] == 0
        and result["good_warnings_missing"] == 0
        and result["baseline_missing"] == 0
    )
