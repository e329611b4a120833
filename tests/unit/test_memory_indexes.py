"""The memory store's LanceDB indexes on a real directory: built when due, never rebuilt
for a write, folded in by optimize; batched writes decide what one-by-one writes do."""

import itertools

import numpy as np
import pytest

from loopwarden.agents.memory.embedding import HashingEmbedder
from loopwarden.agents.memory.retrieval import MemorySearch
from loopwarden.agents.memory.writer import MemoryWriter
from loopwarden.schemas.memory import validate_memory_write
from loopwarden.settings import MemoryIndexSettings, MemorySettings
from loopwarden.storage.memory_table import MemoryTable

CFG = MemorySettings(embedder="hashing", hashing_dims=64)
NOW = 1_800_000_000.0
SMALL = MemoryIndexSettings(
    vector_min_rows=300, rows_per_partition=256, optimize_every_rows=150, keep_versions_s=0
)
_n = itertools.count()


def write(content, vector=None, **payload):
    if vector is not None:
        payload["embedding"] = [float(x) for x in vector]
    return validate_memory_write(
        {"event_id": f"w{next(_n)}", "occurred_at": NOW, "payload": {"content": content, **payload}}
    )


def clustered(n, dims=64, centres=20, seed=0):
    """Unit vectors around a few centres (the shape of real embeddings, not isotropic)."""
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((centres, dims))
    v = base[rng.integers(0, centres, n)] + 0.6 * rng.standard_normal((n, dims))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def indexed(table):
    return {
        config.columns[0]: table.table.index_stats(config.name)
        for config in table.table.list_indices()
    }


@pytest.fixture
def store(tmp_path):
    table = MemoryTable(str(tmp_path), CFG.hashing_dims, indexes=SMALL)
    writer = MemoryWriter(table, HashingEmbedder(CFG.hashing_dims), CFG)
    return table, writer


def test_scalar_and_full_text_indexes_come_with_the_first_rows(store):
    table, writer = store
    writer.write([write("The payment API times out after 30 seconds", entity_refs=["api"])], NOW)
    kinds = {column: stats.index_type for column, stats in indexed(table).items()}
    assert kinds == {
        "id": "BTREE",
        "scope": "BITMAP",
        "deleted": "BITMAP",
        "entity_refs": "LABEL_LIST",
        "content": "FTS",
    }
    assert not table.indexes.has_vector_index


def test_full_text_finds_rows_written_after_its_index_without_a_rebuild(store):
    table, writer = store
    writer.write([write("Deployments need AWS_REGION set")], NOW)
    index_before = {c.name: c.index_uuid for c in table.table.list_indices()}["content_idx"]
    writer.write([write("The staging cluster runs on zorblax nodes")], NOW)
    assert indexed(table)["content"].num_unindexed_rows == 1
    search = MemorySearch(table, writer.embedder, CFG)
    assert [
        "zorblax" in m["content"]
        for m in search.search("zorblax", strategies=("full_text",)).memories
    ] == [True]
    index_after = {c.name: c.index_uuid for c in table.table.list_indices()}["content_idx"]
    assert index_after == index_before


@pytest.mark.filterwarnings("ignore:optimize")
def test_vector_index_past_the_threshold_then_optimize_folds_new_rows_in(store):
    table, writer = store
    vectors = clustered(420)
    for start in range(0, 280, 70):  # below the threshold: exact search only
        writer.write(
            [write(f"fact {i}", v) for i, v in enumerate(vectors[start : start + 70], start)], NOW
        )
    assert not table.indexes.has_vector_index
    writer.write([write(f"fact {i}", v) for i, v in enumerate(vectors[280:350], 280)], NOW)
    assert table.indexes.has_vector_index
    versions_before = len(table.table.list_versions())
    writer.write([write(f"fact {i}", v) for i, v in enumerate(vectors[350:], 350)], NOW)
    stats = indexed(table)
    assert all(s.num_unindexed_rows == 0 for s in stats.values()), stats  # 150 rows: optimized
    assert len(table.table.list_versions()) <= versions_before  # old versions dropped
    # the index answers like an exact search on this data
    for query in clustered(10, seed=7):
        approx = {r["id"] for r, _ in table.neighbours(query, "default", 10)}
        exact = {r["id"] for r, _ in table.neighbours(query, "default", 10, exact=True)}
        assert len(approx & exact) >= 9


def test_a_batch_decides_what_one_write_at_a_time_decides(tmp_path):
    """Duplicates, corroborations and contradictions inside one batch and against the
    table: the batched path (one query per scope, a batch similarity matrix) gives
    the outcomes of applying the same writes one by one."""
    texts = [
        ("The user prefers SQLite for local storage", ["db", "pref"], "default"),
        ("The user prefers SQLite for local storage.", ["db", "pref"], "default"),
        ("The user does not prefer SQLite for local storage", ["db"], "default"),
        ("The user prefers SQLite for local storage", ["db", "pref"], "team"),
        ("Run ruff before committing", ["ci"], "default"),
        ("Always run ruff before committing", ["ci"], "default"),
        ("The user prefers SQLite for local storage!", ["db", "pref"], "default"),
        ("Never run ruff before committing", ["ci"], "default"),
    ]
    writes = [
        validate_memory_write(
            {
                "event_id": f"e{i}",
                "occurred_at": NOW,
                "payload": {"content": c, "tags": t, "scope": s},
            }
        )
        for i, (c, t, s) in enumerate(texts)
    ]
    seed = write("The team prefers PostgreSQL in production", tags=["db"])

    def outcomes(batch_size, path):
        table = MemoryTable(str(path), CFG.hashing_dims)
        writer = MemoryWriter(table, HashingEmbedder(CFG.hashing_dims), CFG)
        writer.write([seed], NOW)
        result = []
        for start in range(0, len(writes), batch_size):
            result += writer.write(writes[start : start + batch_size], NOW)
        rows = table.columns(["id", "corroboration_count", "contradiction_count"]).to_pylist()
        return (
            [
                (o["status"], o["duplicate_of"], [c["memory_id"] for c in o["conflicts"]])
                for o in result
            ],
            sorted((r["id"], r["corroboration_count"], r["contradiction_count"]) for r in rows),
            sorted((r["src"], r["dst"]) for r in table.relations_of([r["id"] for r in rows])),
        )

    one_by_one = outcomes(1, tmp_path / "one")
    batched = outcomes(len(writes), tmp_path / "all")
    assert batched == one_by_one
    statuses = [status for status, _, _ in batched[0]]
    assert statuses.count("duplicate") >= 2 and "stored_with_conflicts" in statuses


def test_full_text_takes_any_user_text_as_words(store):
    """A query holding quotes was parsed as a phrase query and failed ("position is
    not found but required for phrase queries")."""
    table, writer = store
    writer.write([write('grep -r "Structured ndarray" astropy/table found one match')], NOW)
    for query in ('"Structured ndarray"', 'grep "astropy', "a AND (b", "+-~*:"):
        table.full_text(query, "default", 5)  # must not raise
    assert table.full_text('"structured ndarray" astropy', "default", 5)


@pytest.mark.filterwarnings("ignore:optimize")
def test_rows_taken_by_a_stale_row_id_are_fetched_by_id(store):
    """Retrieval reads the fused rows by the row ids its queries returned; compaction
    in between moves rows, and a moved row must come back by its id, not another."""
    table, writer = store
    for i in range(4):  # four fragments
        writer.write([write(f"fact number {i} about zebras"), write(f"note {i} on owls")], NOW)
    found = table.full_text("zebras", "default", 10, row_ids=True)
    assert len(found) == 4
    stale = {row["id"]: row["_rowid"] for row in found}
    table.table.delete("content LIKE 'note 0%'")
    table.indexes.optimize()  # compaction: the fragments are rewritten, row ids move
    moved = {r["id"]: r["_rowid"] for r in table.full_text("zebras", "default", 10, row_ids=True)}
    assert moved != stale
    raw = table.table.take_row_ids(list(stale.values())).select(["id"]).to_arrow()
    assert sorted(raw.column("id").to_pylist()) != sorted(stale)  # other rows, or fewer
    rows = table.take(stale, ("content",))
    assert {memory_id: row["content"] for memory_id, row in rows.items()} == {
        memory_id: table.get([memory_id])[0]["content"] for memory_id in stale
    }


def test_full_text_splits_chinese_into_words(store):
    """The simple tokenizer kept a run of Han characters as one token, so a Chinese
    question never matched a Chinese memory by its words."""
    table, writer = store
    cache = "缓存失效是因为 Redis 的过期时间设置成了 60 秒"
    writer.write([write(cache), write("日志每天轮转")], NOW)
    found = table.full_text("为什么缓存会失效", "default", 5, ("content",))
    assert [row["content"] for row in found] == [cache]


@pytest.mark.filterwarnings("ignore:optimize")
def test_a_vector_index_folded_too_often_is_retrained_into_one_segment(tmp_path):
    settings = SMALL.model_copy(update={"optimize_every_rows": 40, "max_vector_segments": 2})
    table = MemoryTable(str(tmp_path), CFG.hashing_dims, indexes=settings)
    writer = MemoryWriter(table, HashingEmbedder(CFG.hashing_dims), CFG)
    vectors = clustered(460)
    writer.write([write(f"fact {i}", v) for i, v in enumerate(vectors[:300])], NOW)
    assert table.indexes.vector_segments() == 1
    seen = []
    for start in range(300, 460, 40):  # each batch is folded in: a segment more
        batch = vectors[start : start + 40]
        writer.write([write(f"fact {i}", v) for i, v in enumerate(batch, start)], NOW)
        seen.append(table.indexes.vector_segments())
    assert max(seen) == 2 and 1 in seen[1:]  # a third segment was retrained away
    assert indexed(table)["vector"].num_unindexed_rows == 0


# SMALL keeps no old versions (keep_versions_s=0), which LanceDB rightly warns about;
# this test's table has one process and no concurrent reader
@pytest.mark.filterwarnings("ignore:optimize\\(cleanup_older_than=0\\):UserWarning")
def test_relation_batches_are_compacted_before_their_manifests_pile_up(tmp_path):
    # every write batch's relations became a fragment of their own, compacted only by
    # optimize (every optimize_every_rows memory rows): a store of 3,911 relations held
    # 3,911 fragments, 4,205 versions and 719 MB of manifests
    table = MemoryTable(str(tmp_path), CFG.hashing_dims, indexes=SMALL)
    for i in range(120):
        table.relate_many([(f"m{i}", f"m{i + 1}", "contradicts", 0.8, "test")])
        table.indexes.keep()  # the leader's background upkeep, every upkeep interval
    stats = table.relations.stats()["fragment_stats"]
    assert stats["num_fragments"] <= SMALL.relation_max_fragments
    assert table.relations.count_rows() == 120
    assert len(table.relations.list_versions()) <= SMALL.relation_max_fragments + 4
