"""Retrieval quality on a labelled set: recall@5 of each strategy alone and fused.

``data/retrieval_set.tsv`` was written for this benchmark: 129 memories of the
kind agents keep (project facts, failures, preferences; 96 in English, 33 in
Chinese), each with one English and one Chinese question that paraphrases it
(258 queries; a question in the other language than its memory is a
cross-lingual query). The memories are stored among ``--distractors`` real
sentences from the agent trajectories, so a strategy must find the one right
memory among thousands. Recall@k: the share of queries whose memory is among the
first k results, under both orders of the answer (``memory.rank_by``: the
fused rank, or relevance first). Runs on a temporary LanceDB directory with the
default embedder (USE multilingual) unless ``--embedder hashing``.

    .venv/bin/python benchmarks/memory_retrieval.py
"""

from __future__ import annotations

import argparse
import itertools
import json
import tempfile
import time
from pathlib import Path

from realistic_memories import real_sentences

from loopwarden.agents.memory.embedding import make_embedder
from loopwarden.agents.memory.retrieval import MemorySearch
from loopwarden.agents.memory.writer import MemoryWriter
from loopwarden.schemas.memory import validate_memory_write
from loopwarden.settings import MemorySettings
from loopwarden.storage.memory_table import MemoryTable

STRATEGIES = {
    "semantic": ("semantic",),
    "full_text": ("full_text",),
    "entity": ("entity",),
    "fused (intent plan)": None,
    "fused (all strategies)": ("semantic", "full_text", "entity", "causal_trace"),
}
ORDERINGS = ("rrf", "relevance")
"""``memory.rank_by``: each row is measured under both orders of the answer."""


DATA = Path(__file__).parent / "data" / "retrieval_set.tsv"


def labelled_set() -> list[dict[str, str]]:
    """The memories with their two questions."""
    lines = DATA.read_text(encoding="utf-8").splitlines()
    header = lines[0].split("\t")
    return [dict(zip(header, line.split("\t"), strict=True)) for line in lines[1:] if line]


def is_chinese(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--embedder", choices=["use", "hashing", "e5"], default="use")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--distractors", type=int, default=5_000)
    args = parser.parse_args()
    cfg = MemorySettings(embedder=args.embedder)
    embedder = make_embedder(cfg)
    table = MemoryTable(tempfile.mkdtemp(prefix="lw-eval-"), embedder.dims)
    writer = MemoryWriter(table, embedder, cfg)
    now = time.time()
    memories = labelled_set()
    distractors = real_sentences()[: args.distractors]

    def memory_write(key: str, content: str, entities: list[str]) -> object:
        return validate_memory_write(
            {
                "event_id": key,
                "occurred_at": now,
                "payload": {"memory_id": key, "content": content, "entity_refs": entities},
            }
        )

    writes = [memory_write(f"distractor-{i}", text, []) for i, text in enumerate(distractors)]
    writes += [
        memory_write(m["key"], m["content"], [e for e in m["entities"].split(";") if e])
        for m in memories
    ]
    outcomes = []
    for start in range(0, len(writes), 500):
        outcomes += writer.write(writes[start : start + 500], now)
    stored = sum(o["status"].startswith("stored") for o in outcomes)
    queries = [
        (m[column], m["key"], column[-2:], "zh" if is_chinese(m["content"]) else "en")
        for m in memories
        for column in ("query_en", "query_zh")
    ]
    searches = {
        rank_by: MemorySearch(table, embedder, cfg.model_copy(update={"rank_by": rank_by}))
        for rank_by in ORDERINGS
    }
    rows = []
    for (name, strategies), rank_by in itertools.product(STRATEGIES.items(), ORDERINGS):
        search = searches[rank_by]
        hits: dict[str, list[bool]] = {"all": [], "en": [], "zh": [], "cross": []}
        latencies = []
        for query, key, query_lang, memory_lang in queries:
            started = time.perf_counter()
            result = search.search(query, strategies=strategies, budget_bytes=100_000)
            latencies.append(time.perf_counter() - started)
            hit = key in {m["id"] for m in result.memories[: args.k]}
            hits["all"].append(hit)
            hits[query_lang].append(hit)
            if query_lang != memory_lang:
                hits["cross"].append(hit)
        row = {"strategy": f"{name}, by {rank_by}", "rank_by": rank_by}
        row.update({f"recall@{args.k} {part}": sum(h) / len(h) for part, h in hits.items()})
        row["p50_ms"] = 1000 * sorted(latencies)[len(latencies) // 2]
        rows.append(row)
    print(
        f"{len(memories)} labelled memories among {len(distractors):,} distractors "
        f"({stored:,} stored), {len(queries)} queries, embedder {embedder.name}"
    )
    parts = ("all", "en", "zh", "cross")
    print(f"{'strategy, order':<36} " + " ".join(f"{p:>7}" for p in parts) + "   p50 ms")
    for row in rows:
        values = " ".join(f"{row[f'recall@{args.k} {p}']:7.3f}" for p in parts)
        print(f"{row['strategy']:<36} {values}   {row['p50_ms']:6.1f}")
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    path = out / f"memory_retrieval-{time.strftime('%Y%m%d-%H%M%S')}.json"
    summary = {"embedder": embedder.name, "queries": len(queries), "k": args.k, "rows": rows}
    path.write_text(json.dumps(summary, indent=2))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
