"""Several writers on one LanceDB store (threads with their own handles stand for the
worker processes of a group, ``memory import`` and an analyst): nothing fails for
losing a commit race, nothing is lost, and index upkeep can run beside the writes."""

import threading

import pytest

from loopwarden.agents.memory.embedding import HashingEmbedder
from loopwarden.agents.memory.importer import MemoryImporter
from loopwarden.agents.memory.writer import MemoryWriter
from loopwarden.schemas.memory import validate_memory_write
from loopwarden.settings import MemoryIndexSettings, MemorySettings
from loopwarden.storage.memory_table import MemoryTable

CFG = MemorySettings(embedder="hashing")
NOW = 1_800_000_000.0


def distinct(prefix, i):
    """A sentence of its own words (so no two are duplicates)."""
    return f"{prefix} " + " ".join(f"w{prefix}{i}x{k}" for k in range(5))


def writes(prefix, count, content=None, **payload):
    return [
        validate_memory_write(
            {
                "event_id": f"{prefix}-{i}",
                "occurred_at": NOW,
                "payload": {"content": content or distinct(prefix, i), **payload},
            }
        )
        for i in range(count)
    ]


def run_together(*calls):
    """Start every call at the same instant; return the exceptions they raised."""
    barrier = threading.Barrier(len(calls))
    errors = []

    def run(call):
        barrier.wait()
        try:
            call()
        except Exception as exc:  # what the test is about
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(call,)) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def test_writers_racing_on_an_empty_store_all_succeed(tmp_path):
    """Three writers used to race to build the first indexes: two failed with
    'Retryable commit conflict ... CreateIndex' after their rows were appended."""
    uri = str(tmp_path)
    MemoryTable(uri, CFG.hashing_dims)
    outcomes = {}
    for round_ in range(3):

        def importer(k, r=round_):
            table = MemoryTable(uri, CFG.hashing_dims)
            imported = MemoryImporter(table, HashingEmbedder(CFG.hashing_dims), CFG)
            outcomes[k] = imported.import_writes(writes(f"r{r}w{k}", 20), NOW)

        errors = run_together(*(lambda k=k: importer(k) for k in range(3)))
        assert errors == []
        assert all(o["status"] == "stored" for k in range(3) for o in outcomes[k])  # not retried
    table = MemoryTable(uri, CFG.hashing_dims)
    assert table.count() == 3 * 3 * 20
    assert {"id", "scope", "deleted", "entity_refs", "content"} <= set(table.indexes._indexed())


@pytest.mark.parametrize("same_handle", [True, False], ids=["one worker", "two workers"])
def test_background_upkeep_runs_beside_checked_writes(tmp_path, same_handle):
    uri = str(tmp_path)
    settings = MemoryIndexSettings(vector_min_rows=100, optimize_every_rows=20)
    embedder = HashingEmbedder(CFG.hashing_dims)
    writer_table = MemoryTable(uri, CFG.hashing_dims, indexes=settings, upkeep="background")
    writer = MemoryWriter(writer_table, embedder, CFG)
    seeded = writer.write(writes("seed", 150), NOW)
    assert writer_table.indexes._indexed() == {}  # background: writers build nothing
    keeper = (  # the leader's timer thread, in this worker or in another one
        writer_table
        if same_handle
        else MemoryTable(
            uri, CFG.hashing_dims, indexes=settings, upkeep="background", read_consistency_s=0
        )
    )
    first = keeper.indexes.keep()  # builds every index over the seeds (vector too: 150 rows)
    assert first["seconds"] > 0
    reports, outcomes = [], []
    done = threading.Event()

    def keep():  # the leader's timer, as often as it can while the writes go on
        while not done.is_set():
            reports.append(keeper.indexes.keep())

    def write():  # each batch corroborates a seed memory (evidence update) and appends
        try:
            for batch in range(4):
                outcomes.extend(writer.write(writes(f"dup{batch}", 10, distinct("seed", 3)), NOW))
                outcomes.extend(writer.write(writes(f"new{batch}", 10), NOW + batch))
        finally:
            done.set()

    errors = run_together(keep, write)
    assert errors == []
    reports.append(keeper.indexes.keep())  # folds what the last writes left outside
    assert any(r["folded"] for r in reports)
    assert keeper.indexes.unindexed_rows() == 0
    assert {o["status"] for o in outcomes} == {"duplicate", "stored"}
    indexed = set(MemoryTable(uri, CFG.hashing_dims).indexes._indexed())
    assert {"id", "content", "vector"} <= indexed
    table = MemoryTable(uri, CFG.hashing_dims)
    seeds_stored = sum(o["status"] == "stored" for o in seeded)
    assert table.count() == seeds_stored + 4 * 10
    seed = table.get([o["duplicate_of"] for o in outcomes if o["status"] == "duplicate"][:1])[0]
    assert seed["corroboration_count"] == 4 * 10  # no evidence update lost to a race
