"""Benchmark: the memory store's relations table with and without fragment compaction.

Each write batch's relations are one merge-insert, so one fragment. This writes
``--batches`` single-relation batches to a fresh LanceDB directory, running the
leader's background upkeep (``indexes.keep()``) every ``--keep-every`` batches,
once with compaction effectively off and once with the default
``memory.index.relation_max_fragments``. It prints the write time, fragments,
versions and the relations directory's size, and writes JSON to ``benchmarks/results/``.

    .venv/bin/python benchmarks/relation_compaction.py --batches 2000
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from loopwarden.settings import MemoryIndexSettings
from loopwarden.storage.memory_table import MemoryTable

RESULTS = Path(__file__).parent / "results"


def run(batches: int, keep_every: int, max_fragments: int) -> dict[str, float]:
    folder = tempfile.mkdtemp(prefix="lw-relations-")
    table = MemoryTable(
        folder, 64, indexes=MemoryIndexSettings(relation_max_fragments=max_fragments)
    )
    started = time.perf_counter()
    for i in range(batches):
        table.relate_many([(f"m{i}", f"m{i + 1}", "contradicts", 0.8, "benchmark")])
        if i % keep_every == keep_every - 1:
            table.indexes.keep()
    seconds = time.perf_counter() - started
    files = Path(folder, "memories_relations.lance").rglob("*")
    return {
        "relation_max_fragments": max_fragments,
        "seconds": round(seconds, 1),
        "fragments": table.relations.stats()["fragment_stats"]["num_fragments"],
        "versions": len(table.relations.list_versions()),
        "megabytes": round(sum(p.stat().st_size for p in files if p.is_file()) / 1e6, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batches", type=int, default=2000)
    parser.add_argument("--keep-every", type=int, default=20)
    args = parser.parse_args()
    default = MemoryIndexSettings().relation_max_fragments
    rows = [run(args.batches, args.keep_every, limit) for limit in (10**9, default)]
    print(f"{'max fragments':>14} {'write s':>8} {'fragments':>10} {'versions':>9} {'MB':>7}")
    for row in rows:
        print(
            f"{row['relation_max_fragments']:>14} {row['seconds']:>8} {row['fragments']:>10} "
            f"{row['versions']:>9} {row['megabytes']:>7}"
        )
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"relation_compaction-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps({"args": vars(args), "rows": rows}, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
