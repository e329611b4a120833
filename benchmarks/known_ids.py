"""Benchmark: telling a batch's new ids from stored ones, by query and by known ids.

Before rows are appended, the memory store looks their ids up (writes are
idempotent by id). For tables of ``--rows`` sizes (random 32-hex ids, as derived
ids are; one fragment per 10,000-row append, as a worker's batches leave them) in
two states — ``fragments``: as appended, no index (a store whose upkeep has not run
yet); ``indexed``: the B-tree on ``id`` built and the table compacted, as the
leader's upkeep leaves it, then 40,000 rows appended since (the unindexed tail
between two folds) — and a batch of ``--batch`` new ids, this times:

- ``query``: LanceDB's ``id IN (…)`` (what every batch paid before known ids);
- ``known ids``: :class:`~loopwarden.storage.known_ids.KnownIds` with its hashes
  current (what a worker pays while only its own appends moved the table);
- ``reread``: reading the table's ids again after a commit not its own.

Medians of ``--reps``. Prints a table and writes JSON to ``benchmarks/results/``.

    .venv/bin/python benchmarks/known_ids.py                      # 100k and 1M rows
    .venv/bin/python benchmarks/known_ids.py --rows 100000 --reps 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
from lancedb.index import BTree

from loopwarden.storage.known_ids import KnownIds
from loopwarden.storage.lancedb_tables import connect
from loopwarden.storage.memory_schema import quote_list

RESULTS = Path(__file__).parent / "results"
APPEND_ROWS = 10_000


def new_ids(count: int) -> list[str]:
    return [uuid.uuid4().hex for _ in range(count)]


SCHEMA = pa.schema([pa.field("id", pa.string(), nullable=False)])
TAIL_ROWS = 40_000


def append(table: object, rows: int) -> None:
    for start in range(0, rows, APPEND_ROWS):
        count = min(APPEND_ROWS, rows - start)
        table.add(pa.table({"id": new_ids(count)}, schema=SCHEMA))  # type: ignore[attr-defined]


def table_of(rows: int, state: str) -> object:
    db = connect(tempfile.mkdtemp(prefix="lw-known-ids-"), None)
    table = db.create_table("memories", schema=SCHEMA)
    if state == "fragments":
        append(table, rows)
        return table
    append(table, rows - TAIL_ROWS)
    table.create_index("id", config=BTree(), replace=True)
    table.optimize()
    append(table, TAIL_ROWS)
    return table


def query(table: object, ids: list[str]) -> set[str]:
    found = (
        table.search()  # type: ignore[attr-defined]
        .where(f"id IN ({quote_list(ids)})")
        .select(["id"])
        .limit(len(ids))
        .to_arrow()
    )
    return set(found.column("id").to_pylist())


def timed(call: object, reps: int) -> float:
    seconds = []
    for _ in range(reps):
        started = time.perf_counter()
        call()  # type: ignore[operator]
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds)


def measure(rows: int, state: str, batch: int, reps: int) -> dict[str, Any]:
    table = table_of(rows, state)
    known = KnownIds()
    reread = timed(lambda: known.reread(table, table.version), reps)
    checks = [new_ids(batch) for _ in range(reps)]
    by_query = timed(lambda: query(table, checks.pop()), reps)

    def by_known(ids: list[str]) -> set[str]:
        return known.stored(table, ids, lambda maybe: query(table, maybe))

    checks = [new_ids(batch) for _ in range(reps)]
    by_hash = timed(lambda: by_known(checks.pop()), reps)  # hashes current: the last reread
    assert known.rebuilds == reps, "the hashes went out of date during the checks"
    return {
        "rows": rows,
        "state": state,
        "batch": batch,
        "query_ms": by_query * 1000,
        "known_ids_ms": by_hash * 1000,
        "reread_ms": reread * 1000,
        "query_us_per_id": by_query / batch * 1e6,
        "known_ids_us_per_id": by_hash / batch * 1e6,
        "reread_us_per_row": reread / rows * 1e6,
        "hash_mb": known.nbytes / 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--batch", type=int, default=14_000, help="ids per batch")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--states", nargs="+", default=["indexed", "fragments"])
    args = parser.parse_args()
    results = [
        measure(rows, state, args.batch, args.reps) for rows in args.rows for state in args.states
    ]
    print(f"\n{args.batch:,} new ids a batch, medians of {args.reps}")
    head = ("rows", "state", "query ms", "known ms", "ratio", "reread ms", "MB")
    print("{:>10} {:>10} {:>9} {:>9} {:>6} {:>10} {:>5}".format(*head))
    for r in results:
        ratio = r["query_ms"] / r["known_ids_ms"]
        print(
            f"{r['rows']:>10,} {r['state']:>10} {r['query_ms']:>9.1f} {r['known_ids_ms']:>9.1f} "
            f"{ratio:>5.1f}× {r['reread_ms']:>10.0f} {r['hash_mb']:>5.1f}"
        )
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"known_ids-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps({"args": vars(args), "results": results}, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
