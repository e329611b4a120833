"""Memories shaped like real ones, for the scale benchmarks.

Contents are real sentences from the agent trajectories in
``shared/datasets/trajectories`` (thoughts, commands, observations), embedded by
the default embedder (USE multilingual). A table of N memories holds clusters
around those embeddings: member = normalise(sentence vector + s·noise), s uniform
in [0.3, 1.0], so members sit at cosine 0.7–0.96 from their sentence and 0.5–0.9
from each other, the spread of paraphrases. Never isotropic random vectors: a
nearest-neighbour search over those is meaningless (every point is equally far).
Entities are the sentence's identifier-like words; creation times span 120 days.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import orjson
import pyarrow as pa

from loopwarden.storage.memory_schema import memory_schema

DATASET = Path(
    os.environ.get(
        "LOOPWARDEN_TRAJECTORIES",
        Path(__file__).resolve().parents[2] / "shared" / "datasets" / "trajectories" / "events",
    )
)
"""The agent trajectories (JSON lines): $LOOPWARDEN_TRAJECTORIES, else the project's
``shared/datasets/trajectories/events`` next to the checkout."""
CACHE = Path(__file__).parent / "results" / "cache"
_SPLIT = re.compile(r"(?<=[.!?。！？])\s+|\n+")
_WORDS = re.compile(r"[A-Za-z_][\w.]{3,}")
DAY = 86_400.0


def real_sentences(dataset: Path = DATASET) -> list[str]:
    """Distinct sentences of 20–300 characters from every text field of every event."""
    found: set[str] = set()

    def walk(value: object) -> None:
        if isinstance(value, str):
            for sentence in _SPLIT.split(value):
                sentence = sentence.strip()
                if 20 <= len(sentence) <= 300 and re.search(r"[A-Za-z\u4e00-\u9fff]{3}", sentence):
                    found.add(sentence)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for path in sorted(dataset.rglob("*.jsonl")):
        for line in path.read_bytes().splitlines():
            walk(orjson.loads(line))
    if not found:
        raise SystemExit(
            f"no sentences under {dataset}: set LOOPWARDEN_TRAJECTORIES to a folder of "
            "trajectory JSON lines (shared/datasets/trajectories/events)"
        )
    return sorted(found)


def embedded_sentences(count: int, seed: int = 0) -> tuple[list[str], np.ndarray]:
    """``count`` real sentences and their USE vectors (cached under results/cache)."""
    sentences = real_sentences()
    rng = np.random.default_rng(seed)
    chosen = [sentences[i] for i in rng.choice(len(sentences), min(count, len(sentences)), False)]
    cache = CACHE / f"use-{len(chosen)}-{seed}.npy"
    if cache.exists():
        return chosen, np.load(cache)
    from loopwarden.agents.memory.embedding import UniversalSentenceEncoder

    embedder = UniversalSentenceEncoder()
    vectors = np.concatenate(
        [embedder.embed(chosen[i : i + 1000]) for i in range(0, len(chosen), 1000)]
    )
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(cache, vectors)
    return chosen, vectors


def entities_of(sentence: str) -> list[str]:
    """Up to two identifier-like words of a sentence, lower-cased."""
    words = sorted(set(_WORDS.findall(sentence)), key=lambda w: (-len(w), w))
    return [w.lower() for w in words[:2]]


def cluster_members(base: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    """Unit vectors around ``base`` rows picked at random (returns the picks too)."""
    picks = rng.integers(0, len(base), count)
    spread = rng.uniform(0.3, 1.0, count)[:, None].astype(np.float32)
    noise = rng.standard_normal((count, base.shape[1])).astype(np.float32)
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    vectors = base[picks] + spread * noise
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return picks, vectors.astype(np.float32)


def memory_batches(
    sentences: list[str],
    base: np.ndarray,
    total: int,
    batch: int,
    now: float,
    seed: int = 1,
) -> Iterator[pa.Table]:
    """``total`` memories as Arrow tables of the memory schema, ``batch`` rows each."""
    rng = np.random.default_rng(seed)
    schema = memory_schema(base.shape[1])
    entities = [entities_of(s) for s in sentences]
    for start in range(0, total, batch):
        n = min(batch, total - start)
        picks, vectors = cluster_members(base, n, rng)
        flat = pa.array(vectors.ravel())
        created = now - rng.uniform(0, 120, n) * DAY
        scores = {d: pa.array(rng.uniform(0, 1, n)) for d in ("r", "c", "t", "a", "p", "o", "e")}
        columns = {
            "id": pa.array([f"m{start + i}" for i in range(n)]),
            "scope": pa.array(["default"] * n),
            "content": pa.array([sentences[p] for p in picks]),
            "tags": pa.array([["trajectory"]] * n, pa.list_(pa.string())),
            "potential_questions": pa.array([[]] * n, pa.list_(pa.string())),
            "entity_refs": pa.array([entities[p] for p in picks], pa.list_(pa.string())),
            "memory_type": pa.array(["fact"] * n),
            "layer": pa.array(["short_term"] * n),
            **scores,
            "importance": pa.array(rng.uniform(0.2, 1.0, n)),
            "source_reliability": pa.array(np.full(n, 0.7)),
            "trust": pa.array(rng.uniform(0.3, 0.9, n)),
            "corroboration_count": pa.array(np.zeros(n, np.int32)),
            "contradiction_count": pa.array(np.zeros(n, np.int32)),
            "corroborated_by": pa.array([[]] * n, pa.list_(pa.string())),
            "access_count": pa.array(rng.integers(0, 5, n).astype(np.int32)),
            "last_access_at": pa.array(created + rng.uniform(0, 10, n) * DAY),
            "created_at": pa.array(created),
            "updated_at": pa.array(created),
            "decay_rate": pa.array(np.full(n, 0.05)),
            "deleted": pa.array(np.zeros(n, bool)),
            "source_loop_id": pa.array([None] * n, pa.string()),
            "source_event_id": pa.array([None] * n, pa.string()),
            "vector": pa.FixedSizeListArray.from_arrays(flat, base.shape[1]),
            "question_vector": pa.FixedSizeListArray.from_arrays(flat, base.shape[1]),
            "card": pa.nulls(n, pa.binary()),  # the store writes cards, LanceDB's add none
        }
        yield pa.table(columns, schema=schema)
