"""Benchmark: memory ingest with agent-supplied vectors, through the stream and the storage layer.

Memories are real trajectory sentences with vectors clustered around their USE
embeddings (``realistic_memories``: never isotropic). Per repetition, on fresh
LanceDB directories and fresh topics of the embedded broker:

1. ``lancedb add`` (the baseline): LanceDB's own ``Table.add`` of the same memories
   as Arrow batches of ``--batch`` rows;
2. ``storage layer``: ``MemoryImporter.import_writes`` of validated writes in
   batches of ``--batch`` (redaction, scoring, id look-up, Arrow conversion,
   append — what a worker with ``memory.write_checks=deferred`` does per batch of
   JSON writes), index upkeep left to the background as in a worker, then timed on
   its own (``index_upkeep_s``: building the scalar, full-text and vector indexes);
   ``storage layer, columns``: the same memories as Arrow columns (what a worker
   gets from ``remember_many``), each batch checked, redacted
   (``check_columns``) and stored (``MemoryImporter.import_columns``);
3. ``stream``: a real ``loopwarden worker`` (memory role only, checks deferred),
   warmed up on one write; the memories go through ``AsyncPublisher.remember_many``
   (checked and redacted as columns, sent as Arrow IPC records); memories/s = N /
   (first publish → the worker's group committed the end of the memory-writes
   topic; a stored batch is committed at once). Publisher, broker and worker
   share this machine's two cores;
4. ``worker alone``: the same memories published first, then a worker started on
   them: outcomes/s between its first and last memory outcome.

Every phase is checked: the table must hold N memories afterwards. Prints a table
(medians) and writes ``benchmarks/results/memory_ingest.json``.

    .venv/bin/python benchmarks/memory_ingest.py                  # 100,000 memories, 3 reps
    .venv/bin/python benchmarks/memory_ingest.py --memories 20000 --reps 1
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import lancedb
import numpy as np
from realistic_memories import cluster_members, embedded_sentences, entities_of, memory_batches
from replay import committed_end

from loopwarden.agents.capabilities import CAPABILITIES
from loopwarden.agents.memory.embedding import HashingEmbedder
from loopwarden.agents.memory.importer import MemoryImporter
from loopwarden.schemas.memory_columns import check_columns
from loopwarden.settings import Settings, settings_env
from loopwarden.storage.memory_schema import memory_schema
from loopwarden.storage.memory_table import MemoryTable
from loopwarden.streams.client.memory_writes import make_memory_write, writes_table
from loopwarden.streams.client.publisher import AsyncPublisher
from loopwarden.streams.tools.broker import EmbeddedBroker
from loopwarden.streams.tools.replay_reader import TopicRangeReader
from loopwarden.streams.tools.topics import ensure_topics

RESULTS = Path(__file__).parent / "results"


class _NoEmbedder(HashingEmbedder):
    """Every write carries its vector: embedding anything would be a bug here."""

    def embed(self, texts: list[str]) -> np.ndarray:
        raise AssertionError(f"{len(texts)} text(s) embedded although vectors were supplied")


def memories(sentences: list[str], base: np.ndarray, n: int, seed: int) -> list[dict[str, Any]]:
    """``n`` memory items as an agent would hand them to ``remember_many``."""
    rng = np.random.default_rng(seed)
    picks, vectors = cluster_members(base, n, rng)
    return [
        {
            "event_id": f"ingest-{seed}-{i}",
            "content": sentences[p],
            "tags": ["trajectory"],
            "entity_refs": entities_of(sentences[p]),
            "embedding": vectors[i],
        }
        for i, p in enumerate(picks)
    ]


def lancedb_add(sentences: list[str], base: np.ndarray, n: int, batch: int, scratch: Path) -> float:
    tables = list(memory_batches(sentences, base, n, batch, time.time()))
    table = lancedb.connect(str(scratch / "baseline")).create_table(
        "memories", schema=memory_schema(base.shape[1])
    )
    started = time.perf_counter()
    for arrow in tables:
        table.add(arrow)
    rate = n / (time.perf_counter() - started)
    assert table.count_rows() == n
    return rate


def storage_layer(
    items: list[dict[str, Any]], dims: int, batch: int, scratch: Path
) -> dict[str, float]:
    settings = Settings().memory.model_copy(update={"write_checks": "deferred"})
    writes = [make_memory_write(**item) for item in items]
    table = MemoryTable(str(scratch / "store"), dims, indexes=settings.index, upkeep="background")
    importer = MemoryImporter(table, _NoEmbedder(dims), settings)
    started = time.perf_counter()
    for start in range(0, len(writes), batch):
        importer.import_writes(writes[start : start + batch], time.time())
    rate = len(writes) / (time.perf_counter() - started)
    assert table.count() == len(writes)
    started = time.perf_counter()  # what a worker's leader does beside the writes
    table.indexes.keep()
    return {"storage_layer_per_s": rate, "index_upkeep_s": time.perf_counter() - started}


def storage_columns(
    items: list[dict[str, Any]], dims: int, batch: int, scratch: Path
) -> dict[str, float]:
    """The worker's bulk work on Arrow records: check, redact, store."""
    settings = Settings().memory.model_copy(update={"write_checks": "deferred"})
    wire = writes_table([make_memory_write(**item) for item in items])
    table = MemoryTable(str(scratch / "columns"), dims, indexes=settings.index, upkeep="background")
    importer = MemoryImporter(table, _NoEmbedder(dims), settings)
    started = time.perf_counter()
    for start in range(0, wire.num_rows, batch):
        checked = check_columns(wire.slice(start, batch))
        importer.import_columns([checked.columns], time.time())
    rate = wire.num_rows / (time.perf_counter() - started)
    assert table.count() == wire.num_rows
    return {"storage_columns_per_s": rate}


async def committed(settings: Settings) -> float:
    return await committed_end(settings, [settings.topics.memory_writes], timeout_s=900)


ENCODING = "arrow"  # --encoding: how remember_many sends the writes
PER_CALL = 10_000  # --per-call: memories per remember_many call


async def publish(settings: Settings, items: list[dict[str, Any]], per_record: int) -> float:
    """Publish ``items`` in ``remember_many`` calls of ``PER_CALL`` (each call checks all
    its items before it sends any, so one call of everything sends nothing for seconds)."""
    started = time.monotonic()
    async with AsyncPublisher(settings, topic=settings.topics.memory_writes) as publisher:
        for start in range(0, len(items), PER_CALL):
            chunk = items[start : start + PER_CALL]
            await publisher.remember_many(chunk, per_record=per_record, encoding=ENCODING)
    return time.monotonic() - started


def worker_settings(broker: EmbeddedBroker, scratch: Path) -> Settings:
    """A memory-only worker on fresh topics, checks deferred."""
    tag = f"bench-ingest-{uuid.uuid4().hex[:6]}"
    settings = Settings().namespaced(tag, bootstrap_servers=broker.bootstrap_servers)
    memory = settings.memory.model_copy(
        update={"uri": str(scratch / tag / "memory"), "write_checks": "deferred"}
    )
    settings = settings.model_copy(
        update={
            "roles": frozenset({"memory"}),
            "data_dir": str(scratch / tag),
            "memory": memory,
            "log_level": "info",
        }
    )
    asyncio.run(ensure_topics(settings, CAPABILITIES))
    return settings


def start_worker(settings: Settings, scratch: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, **settings_env(settings)}
    log = open(scratch / f"{settings.app_id}.log", "wb")  # noqa: SIM115
    return subprocess.Popen(
        [sys.executable, "-m", "loopwarden", "worker"], env=env, stdout=log, stderr=log
    )


def stop_worker(worker: subprocess.Popen[bytes]) -> None:
    worker.terminate()
    worker.wait(60)


def stored(settings: Settings, dims: int) -> int:
    return MemoryTable(settings.memory.uri, dims, settings.memory.table).count()


async def outcome_times(settings: Settings) -> list[float]:
    """When the worker produced each memory outcome (record timestamps, seconds; an
    Arrow record's outcomes arrive as one JSON array)."""
    topic = settings.topics.memory_outcomes
    times: list[float] = []
    async with TopicRangeReader(settings.kafka.bootstrap_servers) as reader:
        async for records in reader.read(await reader.whole(topic)):
            for r in records:
                count = len(json.loads(r.value)) if r.value[:1] == b"[" else 1
                times.extend([r.timestamp / 1000] * count)
    return sorted(times)


def stream(
    broker: EmbeddedBroker, items: list[dict[str, Any]], dims: int, per_record: int, scratch: Path
) -> dict[str, float]:
    """Publisher and a warm worker at once: publish → committed, and publish → stored
    (the last outcome: every memory in LanceDB and answered; the batch's commit
    follows its outcomes' delivery)."""
    settings = worker_settings(broker, scratch)
    worker = start_worker(settings, scratch)
    try:
        warm = [{**items[0], "event_id": f"{settings.app_id}-warm", "content": "warm-up"}]
        asyncio.run(publish(settings, warm, per_record))
        asyncio.run(committed(settings))  # the worker is up and storing
        start, started_at = time.monotonic(), time.time()
        publish_s = asyncio.run(publish(settings, items, per_record))
        done = asyncio.run(committed(settings))
    finally:
        stop_worker(worker)
    count = stored(settings, dims)
    assert count == len(items) + 1, f"{count} memories stored of {len(items) + 1}"
    last_outcome = asyncio.run(outcome_times(settings))[-1]
    return {
        "stream_per_s": len(items) / (done - start),
        "stream_stored_per_s": len(items) / (last_outcome - started_at),
        "publish_per_s": len(items) / publish_s,
    }


def backlog(
    broker: EmbeddedBroker, items: list[dict[str, Any]], dims: int, per_record: int, scratch: Path
) -> float:
    """The worker alone on a published backlog: outcomes/s between its first and last
    outcome (start-up excluded, the publisher not running)."""
    settings = worker_settings(broker, scratch)
    asyncio.run(publish(settings, items, per_record))
    worker = start_worker(settings, scratch)
    try:
        asyncio.run(committed(settings))
    finally:
        stop_worker(worker)
    count = stored(settings, dims)
    assert count == len(items), f"{count} memories stored of {len(items)}"
    times = asyncio.run(outcome_times(settings))
    first_batch = sum(t <= times[0] for t in times)  # produced at once by the first batch
    if times[-1] - times[0] < 1.0:
        return float("nan")  # a few batches took them all: too few memories to time
    return (len(times) - first_batch) / (times[-1] - times[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--batch", type=int, default=10_000, help="rows per storage batch")
    parser.add_argument("--per-record", type=int, default=2000, help="most writes per record")
    parser.add_argument("--encoding", choices=("arrow", "json"), default="arrow")
    parser.add_argument("--per-call", type=int, default=10_000, help="memories per call")
    args = parser.parse_args()
    global ENCODING, PER_CALL
    ENCODING, PER_CALL = args.encoding, args.per_call
    sentences, base = embedded_sentences(20_000)
    dims = base.shape[1]
    runs = []
    with tempfile.TemporaryDirectory(prefix="lw-ingest-") as scratch_dir:
        scratch = Path(scratch_dir)
        with EmbeddedBroker(log_path=scratch / "broker.log") as broker:
            for rep in range(args.reps):
                rep_dir = scratch / f"rep{rep}"
                rep_dir.mkdir()
                items = memories(sentences, base, args.memories, seed=rep)
                run = {
                    "lancedb_add_per_s": lancedb_add(
                        sentences, base, args.memories, args.batch, rep_dir
                    ),
                    **storage_layer(items, dims, args.batch, rep_dir),
                    **storage_columns(items, dims, args.batch, rep_dir),
                    **stream(broker, items, dims, args.per_record, rep_dir),
                    "worker_backlog_per_s": backlog(broker, items, dims, args.per_record, rep_dir),
                }
                runs.append(run)
                print(
                    f"rep {rep + 1}: " + ", ".join(f"{k} {v:,.0f}" for k, v in run.items()),
                    flush=True,
                )
    summary = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    summary["storage_vs_lancedb"] = summary["storage_layer_per_s"] / summary["lancedb_add_per_s"]
    summary["columns_vs_lancedb"] = summary["storage_columns_per_s"] / summary["lancedb_add_per_s"]
    summary["stream_vs_lancedb"] = summary["stream_per_s"] / summary["lancedb_add_per_s"]
    print(f"\n{args.memories:,} memories, {dims}-d vectors, medians of {args.reps} reps")
    baseline = summary["lancedb_add_per_s"]
    print(f"index upkeep after the storage layer's ingest: {summary['index_upkeep_s']:.1f} s")
    print(f"{'path':<34} {'memories/s':>12} {'vs LanceDB add':>15}")
    for label, key, ratio in (
        ("LanceDB Table.add (baseline)", "lancedb_add_per_s", 1.0),
        ("storage layer (import_writes)", "storage_layer_per_s", summary["storage_vs_lancedb"]),
        (
            "storage layer, columns",
            "storage_columns_per_s",
            summary["columns_vs_lancedb"],
        ),
        ("stream (publish → committed)", "stream_per_s", summary["stream_vs_lancedb"]),
        (
            "stream (publish → stored)",
            "stream_stored_per_s",
            summary["stream_stored_per_s"] / baseline,
        ),
        ("  publisher alone", "publish_per_s", summary["publish_per_s"] / baseline),
        (
            "  worker alone, backlog",
            "worker_backlog_per_s",
            summary["worker_backlog_per_s"] / baseline,
        ),
    ):
        print(f"{label:<34} {summary[key]:>12,.0f} {ratio:>14.2f}×")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "memory_ingest.json"
    out.write_text(
        json.dumps({"memories": args.memories, "runs": runs, "median": summary}, indent=2)
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
