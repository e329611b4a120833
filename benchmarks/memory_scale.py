"""The memory store at scale: ingest, the write path, hybrid retrieval, ranking, maintenance.

Memories are real trajectory sentences embedded by the default embedder and
clustered around (``realistic_memories``). In one run, on fresh LanceDB
directories:

1. ingest — LanceDB's own ``add`` of the Arrow batches (the baseline), then the
   same batches through ``MemoryTable.upsert_arrow`` (idempotent upsert by id,
   index upkeep included): rows/s and the ratio to the baseline;
2. write path — ``MemoryWriter.write`` (redaction, de-duplication, conflicts,
   scoring) of writes carrying agent vectors, on the full table, and
   ``MemoryImporter`` (validation, redaction, scoring, append; checks deferred to
   maintenance) of 10,000 such writes;
3. retrieval — ``MemorySearch.search`` (routing, semantic + full text + entity,
   RRF, ranking, byte budget; the query embedding included) p50/p95 over held-out
   sentences, and recall@10 of the vector index against an exact scan;
4. ranking — ``rank_table`` over every row (columns → numpy);
5. maintenance — one ``Maintenance.run`` and a second one (it must report zeros).

    .venv/bin/python benchmarks/memory_scale.py --rows 1000000
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import lancedb
import numpy as np
from realistic_memories import embedded_sentences, memory_batches

from loopwarden.agents.memory.embedding import UniversalSentenceEncoder
from loopwarden.agents.memory.importer import MemoryImporter
from loopwarden.agents.memory.maintenance import Maintenance
from loopwarden.agents.memory.retrieval import MemorySearch, rank_table
from loopwarden.agents.memory.writer import MemoryWriter
from loopwarden.schemas.memory import validate_memory_write
from loopwarden.settings import MemorySettings
from loopwarden.storage.memory_schema import memory_schema
from loopwarden.storage.memory_table import MemoryTable


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def ingest(batches: list[Any], dims: int, workdir: Path, cfg: MemorySettings) -> dict[str, Any]:
    rows = sum(b.num_rows for b in batches)
    baseline = lancedb.connect(str(workdir / "baseline")).create_table(
        "memories", schema=memory_schema(dims)
    )
    started = time.perf_counter()
    for batch in batches:
        baseline.add(batch)
    lance_s = time.perf_counter() - started
    table = MemoryTable(str(workdir / "store"), dims, indexes=cfg.index)
    started = time.perf_counter()
    for i, batch in enumerate(batches, 1):
        table.upsert_arrow(batch)
        if i % 10 == 0:
            print(f"  upserted {i * batch.num_rows:>9,} rows", flush=True)
    store_s = time.perf_counter() - started
    upkeep_s = table.indexes.seconds
    return {
        "rows": rows,
        "batch_rows": batches[0].num_rows,
        "lancedb_add_rows_per_s": rows / lance_s,
        "store_upsert_rows_per_s": rows / store_s,
        "store_to_lancedb_ratio": lance_s / store_s,
        "index_upkeep_s": upkeep_s,
        "store_upsert_rows_per_s_without_upkeep": rows / (store_s - upkeep_s),
        "table": table,
    }


def write_path(
    table: MemoryTable, cfg: MemorySettings, sentences: list[str], base: np.ndarray, now: float
) -> dict[str, Any]:
    embedder = UniversalSentenceEncoder()
    writer = MemoryWriter(table, embedder, cfg)
    rng = np.random.default_rng(7)
    result: dict[str, Any] = {}
    for batch_size in (200, 1000):
        elapsed, count = 0.0, 0
        for rep in range(3):
            picks = rng.integers(0, len(base), batch_size)
            noise = rng.standard_normal((batch_size, base.shape[1])).astype(np.float32)
            vectors = base[picks] + 0.8 * noise / np.linalg.norm(noise, axis=1, keepdims=True)
            writes = [
                validate_memory_write(
                    {
                        "event_id": f"bench-{batch_size}-{rep}-{i}",
                        "occurred_at": now,
                        "payload": {
                            "content": sentences[p],
                            "embedding": vectors[i].tolist(),
                        },
                    }
                )
                for i, p in enumerate(picks)
            ]
            started = time.perf_counter()
            writer.write(writes, now)
            elapsed += time.perf_counter() - started
            count += batch_size
        result[f"writes_per_s_batch_{batch_size}"] = count / elapsed
    importer = MemoryImporter(table, embedder, cfg)
    for batch_size in (10_000,):
        picks = rng.integers(0, len(base), batch_size)
        noise = rng.standard_normal((batch_size, base.shape[1])).astype(np.float32)
        vectors = base[picks] + 0.8 * noise / np.linalg.norm(noise, axis=1, keepdims=True)
        events = [
            {
                "event_id": f"import-{i}",
                "occurred_at": now,
                "payload": {"content": sentences[p], "embedding": vectors[i].tolist()},
            }
            for i, p in enumerate(picks)
        ]
        started = time.perf_counter()  # validation, redaction, scoring, append
        importer.import_batch([validate_memory_write(e) for e in events], now)
        result[f"import_per_s_batch_{batch_size}"] = batch_size / (time.perf_counter() - started)
    return result


def retrieval(
    table: MemoryTable, cfg: MemorySettings, queries: list[str], recall_queries: int
) -> dict[str, Any]:
    embedder = UniversalSentenceEncoder()
    search = MemorySearch(table, embedder, cfg)
    started = time.perf_counter()
    table.indexes.prewarm()  # what a worker does when it opens the store
    prewarm_s = time.perf_counter() - started
    search.search(queries[0])  # the model's first call
    latencies = []
    for query in queries:
        started = time.perf_counter()
        search.search(query, budget_bytes=2048)
        latencies.append(time.perf_counter() - started)
    vectors = embedder.embed(queries[:recall_queries])
    hits, semantic_s = 0, []
    for vector in vectors:
        started = time.perf_counter()
        approx = {r["id"] for r, _ in table.neighbours(vector, "default", 10)}
        semantic_s.append(time.perf_counter() - started)
        exact = {r["id"] for r, _ in table.neighbours(vector, "default", 10, exact=True)}
        hits += len(approx & exact)
    return {
        "queries": len(queries),
        "prewarm_s": prewarm_s,
        "hybrid_p50_ms": percentile(latencies, 50) * 1e3,
        "hybrid_p95_ms": percentile(latencies, 95) * 1e3,
        "semantic_p95_ms": percentile(semantic_s, 95) * 1e3,
        "recall_at_10": hits / (10 * len(vectors)),
        "vector_index": table.indexes.has_vector_index,
    }


def ranking(table: MemoryTable, cfg: MemorySettings) -> dict[str, Any]:
    times = []
    for _ in range(3):
        started = time.perf_counter()
        rank_table(table, cfg, k=100)
        times.append(time.perf_counter() - started)
    return {"rank_all_s": statistics.median(times)}


def maintenance(table: MemoryTable, cfg: MemorySettings, now: float) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for name in ("first", "second"):
        started = time.perf_counter()
        report = Maintenance(table, cfg).run(now)
        result[f"{name}_cycle_s"] = time.perf_counter() - started
        result[f"{name}_report"] = report.to_json_dict()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=10_000, help="rows per ingest batch")
    parser.add_argument("--sentences", type=int, default=20_000, help="cluster centres")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--recall-queries", type=int, default=50)
    parser.add_argument("--skip", default="", help="comma-separated phases to skip")
    parser.add_argument(
        "--store", type=Path, default=None, help="measure on this store (skips ingest)"
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="  %(message)s")
    skip = set(filter(None, args.skip.split(",")))
    cfg = MemorySettings()
    now = time.time()
    sentences, vectors = embedded_sentences(args.sentences + args.queries)
    base, base_sentences = vectors[: args.sentences], sentences[: args.sentences]
    queries = sentences[args.sentences :]
    print(f"{len(base):,} real sentences as centres, {len(queries)} held out as queries")
    results: dict[str, Any] = {"rows": args.rows}
    if args.store:
        table = MemoryTable(str(args.store), base.shape[1], indexes=cfg.index)
        results["rows"] = table.count()
    else:
        batches = list(memory_batches(base_sentences, base, args.rows, args.batch, now))
        workdir = Path(tempfile.mkdtemp(prefix="lw-scale-"))
        results["store"] = str(workdir / "store")
        print(f"ingest of {args.rows:,} rows in batches of {args.batch:,} ...", flush=True)
        found = ingest(batches, base.shape[1], workdir, cfg)
        del batches
        table = found.pop("table")
        results["ingest"] = found
        print(json.dumps(found, indent=1), flush=True)
    phases = {
        "retrieval": lambda: retrieval(table, cfg, queries, args.recall_queries),
        "ranking": lambda: ranking(table, cfg),
        "write_path": lambda: write_path(table, cfg, base_sentences, base, now),
        "maintenance": lambda: maintenance(table, cfg, now),
    }
    for name, run in phases.items():
        if name in skip:
            continue
        print(f"{name} ...", flush=True)
        results[name] = run()
        print(json.dumps(results[name], indent=1), flush=True)
    out = args.out or Path(__file__).parent / "results" / f"memory_scale-{args.rows}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
