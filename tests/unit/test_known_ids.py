"""Which ids a memory table holds, told without a query for new ids (real LanceDB)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from loopwarden.storage import known_ids
from loopwarden.storage.known_ids import KnownIds
from loopwarden.storage.lancedb_tables import connect

SCHEMA = pa.schema([pa.field("id", pa.string(), nullable=False), pa.field("n", pa.int64())])


def rows(ids):
    return pa.table({"id": list(ids), "n": list(range(len(ids)))}, schema=SCHEMA)


class Queries:
    """The query look-up, counting the ids it is asked about."""

    def __init__(self, table):
        self.table, self.asked = table, []

    def __call__(self, ids):
        self.asked.append(list(ids))
        found = self.table.search().select(["id"]).limit(None).to_arrow().column("id")
        return set(found.to_pylist()) & set(ids)


@pytest.fixture
def table(tmp_path):
    db = connect(str(tmp_path / "lance"), 0)  # reads see every commit at once
    return db.create_table("memories", rows([f"old{i}" for i in range(3000)]))


def append(table, known, ids):
    known.appended(len(ids), table.add(rows(ids)).version, lambda: ids)


def test_a_bulk_of_new_ids_is_told_apart_without_a_query(table):
    known, query = KnownIds(), Queries(table)
    new = [f"new{i}" for i in range(2000)]
    assert known.stored(table, new, query) == set()
    assert query.asked == []  # the table's ids were read once, nothing was looked up
    assert known.rebuilds == 1


def test_replayed_ids_are_found_and_only_they_are_looked_up(table):
    known, query = KnownIds(), Queries(table)
    asked = [f"new{i}" for i in range(1500)] + ["old7", "old2999"]
    assert known.stored(table, asked, query) == {"old7", "old2999"}
    assert query.asked == [["old7", "old2999"]]


def test_own_appends_keep_the_ids_current_without_reading_them_again(table):
    known, query = KnownIds(), Queries(table)
    first = [f"a{i}" for i in range(1200)]
    assert known.stored(table, first, query) == set()
    append(table, known, first)
    again = first[:5] + [f"b{i}" for i in range(1200)]
    assert known.stored(table, again, query) == set(first[:5])
    assert known.rebuilds == 1 and query.asked == [first[:5]]


def test_ids_another_writer_appended_are_seen(table, tmp_path):
    known, query = KnownIds(), Queries(table)
    batch = [f"x{i}" for i in range(1500)]
    assert known.stored(table, batch, query) == set()
    other = connect(str(tmp_path / "lance"), None).open_table("memories")
    other.add(rows(["x3", "x1400"]))  # another process stored two of them meanwhile
    assert known.stored(table, batch, query) == {"x3", "x1400"}
    assert known.rebuilds == 2  # the table moved on by a commit not its own


def test_an_append_after_a_foreign_commit_leaves_the_ids_out_of_date(table, tmp_path):
    known, query = KnownIds(), Queries(table)
    assert known.stored(table, [f"y{i}" for i in range(1500)], query) == set()
    connect(str(tmp_path / "lance"), None).open_table("memories").add(rows(["foreign"]))
    append(table, known, ["mine"])  # two versions on: not the direct successor
    assert known.version is None
    assert known.stored(table, ["foreign", "mine"], query) == {"foreign", "mine"}


def test_a_small_batch_on_stale_ids_is_looked_up_by_query(table):
    known, query = KnownIds(rebuild_min=100), Queries(table)
    assert known.stored(table, ["old1", "new"], query) == {"old1"}
    assert query.asked == [["old1", "new"]] and known.rebuilds == 0


def test_hashes_merged_into_the_sorted_array_are_still_found(table, monkeypatch):
    monkeypatch.setattr(known_ids, "MERGE_EVERY", 10)
    known, query = KnownIds(), Queries(table)
    batch = [f"m{i}" for i in range(1100)]
    assert known.stored(table, batch, query) == set()
    append(table, known, batch)  # 1,100 ≥ 10: merged at once
    assert not known._recent
    assert known.stored(table, batch[:3] + ["z"] * 1000, query) == set(batch[:3])


def test_after_a_foreign_commit_the_ids_are_read_again_only_when_that_pays(table, tmp_path):
    """A reread costs about a query of one id per 10 stored rows: after a foreign commit
    a short run of own appends is looked up by query; a long one pays for a reread."""
    known, query = KnownIds(rebuild_min=100), Queries(table)
    assert known.stored(table, [f"n{i}" for i in range(400)], query) == set()  # 4,000 ≥ 3,000
    append(table, known, [f"own{i}" for i in range(50)])
    connect(str(tmp_path / "lance"), None).open_table("memories").add(rows(["foreign"]))
    batch = ["foreign"] + [f"p{i}" for i in range(199)]
    assert known.stored(table, batch, query) == {"foreign"}
    assert known.rebuilds == 1 and query.asked[-1] == batch  # 200 × 10 < 3,051 rows
    append(table, known, [f"run{i}" for i in range(700)])  # 700 × 10 ≥ 3,751 rows
    batch = ["run3"] + [f"q{i}" for i in range(199)]
    assert known.stored(table, batch, query) == {"run3"}
    assert known.rebuilds == 2 and query.asked[-1] == ["run3"]


def test_a_first_batch_small_against_the_table_is_looked_up_until_a_run_pays(table):
    """The first check of a large table does not read every id for one small batch:
    it queries, and reads the ids once the process's own appends make that pay."""
    known, query = KnownIds(rebuild_min=100), Queries(table)
    batch = [f"f{i}" for i in range(150)]  # 150 × 10 < 3,000 rows
    assert known.stored(table, batch, query) == set()
    assert known.rebuilds == 0 and query.asked == [batch]
    append(table, known, batch)
    append(table, known, [f"g{i}" for i in range(200)])  # a run of 350: 3,500 ≥ 3,350 rows
    assert known.stored(table, ["f3"] + [f"h{i}" for i in range(149)], query) == {"f3"}
    assert known.rebuilds == 1 and query.asked[-1] == ["f3"]
