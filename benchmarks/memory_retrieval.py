"""Retrieval quality on a small labelled set: recall@5 of each strategy alone and fused.

The memories and queries below were written for this benchmark (English and
Chinese, paraphrased queries, entity and causal questions); each query lists the
memories a good answer must contain. Runs on a temporary LanceDB directory with
the default embedder (USE multilingual) unless ``--embedder hashing``.

    .venv/bin/python benchmarks/memory_retrieval.py
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from loopwarden.agents.memory.embedding import make_embedder
from loopwarden.agents.memory.retrieval import MemorySearch
from loopwarden.agents.memory.writer import MemoryWriter
from loopwarden.schemas.memory import validate_memory_write
from loopwarden.settings import MemorySettings
from loopwarden.storage.memory_table import MemoryTable

MEMORIES = {
    "sqlite": (
        "The user prefers SQLite for local storage because it needs no server",
        ["database", "preference"],
        ["sqlite"],
    ),
    "pg_prod": (
        "Production runs PostgreSQL 16 with streaming replication",
        ["database", "production"],
        ["postgresql"],
    ),
    "deploy_perm": (
        "deploy.sh fails with permission denied until chmod +x deploy.sh is run",
        ["deploy", "permissions"],
        ["deploy.sh"],
    ),
    "deploy_env": (
        "Deployments need the AWS_REGION environment variable set to eu-west-1",
        ["deploy", "aws"],
        ["aws"],
    ),
    "tests_flaky": (
        "The integration tests are flaky when the broker starts slowly; retry once",
        ["tests", "ci"],
        ["ci"],
    ),
    "lint": (
        "Always run ruff before committing; CI rejects unformatted code",
        ["ci", "style"],
        ["ruff", "ci"],
    ),
    "timeout": (
        "The payment API times out after 30 seconds; use the async endpoint for bulk jobs",
        ["api", "payments"],
        ["payment api"],
    ),
    "rate": (
        "The search API allows 100 requests per minute per key",
        ["api", "limits"],
        ["search api"],
    ),
    "cn_cache": ("缓存失效是因为 Redis 的过期时间设置成了 60 秒", ["cache", "redis"], ["redis"]),
    "cn_log": ("日志文件每天轮转一次,保留 14 天", ["logging"], ["logrotate"]),
    "outage": (
        "The March outage was caused by a full disk on the database host",
        ["incident", "database"],
        ["postgresql"],
    ),
    "oncall": (
        "On-call engineers must acknowledge pages within 15 minutes",
        ["process", "oncall"],
        ["pagerduty"],
    ),
    "py": (
        "The project targets Python 3.11 and uses uv for local environments",
        ["python", "tooling"],
        ["python"],
    ),
    "style_tone": (
        "The user wants answers short, with code first and explanations after",
        ["preference", "communication"],
        ["user"],
    ),
    "timezone": (
        "All timestamps in the event store are UTC epoch seconds",
        ["data", "time"],
        ["event store"],
    ),
    "backup": (
        "Database backups run nightly at 02:00 and are kept for 30 days",
        ["database", "backup"],
        ["postgresql"],
    ),
    "ssh": (
        "SSH to production needs the bastion host and a hardware key",
        ["security", "production"],
        ["bastion"],
    ),
    "docker": (
        "Docker is not available on the build machines; use podman instead",
        ["tooling", "containers"],
        ["podman"],
    ),
}

QUERIES = [
    ("which database does the user like for local data?", {"sqlite"}),
    ("what database runs in production", {"pg_prod"}),
    ("why does the deploy script fail?", {"deploy_perm"}),
    ("how to fix permission denied on deploy.sh", {"deploy_perm"}),
    ("which region must deployments use", {"deploy_env"}),
    ("why are the integration tests unreliable", {"tests_flaky"}),
    ("what must I run before a commit", {"lint"}),
    ("payment API timing out on bulk jobs", {"timeout"}),
    ("search API rate limit", {"rate"}),
    ("为什么缓存会失效", {"cn_cache"}),
    ("日志保留多久", {"cn_log"}),
    ("what caused the outage in March", {"outage"}),
    ("everything about postgresql", {"pg_prod", "outage", "backup"}),
    ("how should answers be formatted for this user", {"style_tone"}),
    ("what time zone are event timestamps in", {"timezone"}),
    ("how long are database backups kept", {"backup"}),
    ("how do I get into production servers", {"ssh"}),
    ("can I use docker on the build machines", {"docker"}),
]

STRATEGIES = {
    "semantic": ("semantic",),
    "full_text": ("full_text",),
    "entity": ("entity",),
    "fused (intent plan)": None,
    "fused (all strategies)": ("semantic", "full_text", "entity", "causal_trace"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--embedder", choices=["use", "hashing", "e5"], default="use")
    parser.add_argument("--k", type=int, default=5)
    args = parser.parse_args()
    cfg = MemorySettings(embedder=args.embedder)
    embedder = make_embedder(cfg)
    table = MemoryTable(tempfile.mkdtemp(prefix="lw-eval-"), embedder.dims)
    writer = MemoryWriter(table, embedder, cfg)
    now = time.time()
    writes = [
        validate_memory_write(
            {
                "event_id": key,
                "occurred_at": now,
                "payload": {
                    "memory_id": key,
                    "content": content,
                    "tags": tags,
                    "entity_refs": entities,
                },
            }
        )
        for key, (content, tags, entities) in MEMORIES.items()
    ]
    outcomes = writer.write(writes, now)
    stored = sum(o["status"].startswith("stored") for o in outcomes)
    search = MemorySearch(table, embedder, cfg)
    rows = []
    for name, strategies in STRATEGIES.items():
        hits = total = 0
        for query, relevant in QUERIES:
            result = search.search(query, strategies=strategies, budget_bytes=100_000)
            found = {m["id"] for m in result.memories[: args.k]}
            hits += len(found & relevant)
            total += len(relevant)
        rows.append({"strategy": name, f"recall@{args.k}": round(hits / total, 3)})
    print(
        f"{len(MEMORIES)} memories ({stored} stored), {len(QUERIES)} queries, "
        f"embedder {embedder.name}"
    )
    print(f"{'strategy':<24} recall@{args.k}")
    for row in rows:
        print(f"{row['strategy']:<24} {row[f'recall@{args.k}']:.3f}")
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    path = out / f"memory_retrieval-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps({"embedder": embedder.name, "rows": rows}, indent=2))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
